package tool_test

import (
	"fmt"

	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/tool"
)

// A host that carries a catalog hands each agent its tool assembly; the
// default entry covers agents without one of their own.
func ExampleWithCatalog() {
	cat := tool.NewCatalog(map[string]tool.Assembly{
		"qa":              named("qa_tools"),
		tool.DefaultAgent: named("shared_tools"),
	})
	host := tool.WithCatalog(agenttest.NewHost(), cat)
	c, _ := tool.CatalogFromHost(host)
	for _, id := range []string{"qa", "concierge"} {
		a, _ := c.ToolAssembly(id)
		fmt.Println(id, "->", a.Definitions()[0].Name)
	}
	// Output:
	// qa -> qa_tools
	// concierge -> shared_tools
}
