package deploy

import (
	"slices"
	"strings"
)

// splitRef splits a dependency reference into the resource it names and
// the item, if any ("tools/search" → "tools", "search").
func splitRef(ref string) (target, item string) {
	target, item, _ = strings.Cut(ref, "/")
	return target, item
}

// resourceGraph is the dependency graph of a document's resources: an edge
// from a resource to each document resource its deps name. External
// dependencies are not nodes.
type resourceGraph struct {
	doc   *Document
	needs map[string][]string // resource → the resources it depends on, sorted, distinct
}

// newResourceGraph builds the graph. A dep that names neither a document
// resource nor an external dependency is a Validation error.
func newResourceGraph(doc *Document, external map[string]External) (*resourceGraph, error) {
	g := &resourceGraph{doc: doc, needs: make(map[string][]string, len(doc.Resources))}
	for _, name := range sortedKeys(doc.Resources) {
		deps := doc.Resources[name].Deps
		var needs []string
		for _, role := range sortedKeys(deps) {
			target, _ := splitRef(deps[role])
			if _, ok := doc.Resources[target]; ok {
				if !slices.Contains(needs, target) {
					needs = append(needs, target)
				}
				continue
			}
			if _, ok := external[target]; ok {
				continue
			}
			path := childPath(childPath("resources", name)+".deps", role)
			return nil, doc.invalid(path, "", "dep %q references missing resource %q", role, target)
		}
		slices.Sort(needs)
		g.needs[name] = needs
	}
	return g, nil
}

// order returns the build order: every resource after the resources it
// depends on, ties broken alphabetically, so the order is the same on every
// run. A cycle is a Validation error that names it in order
// ("a -> b -> a").
func (g *resourceGraph) order() ([]string, error) {
	pending := make(map[string]int, len(g.needs))
	users := map[string][]string{}
	var ready []string
	for _, name := range sortedKeys(g.needs) {
		pending[name] = len(g.needs[name])
		for _, t := range g.needs[name] {
			users[t] = append(users[t], name)
		}
		if pending[name] == 0 {
			ready = append(ready, name)
		}
	}
	order := make([]string, 0, len(g.needs))
	for len(ready) > 0 {
		name := ready[0]
		ready = ready[1:]
		order = append(order, name)
		for _, u := range users[name] {
			if pending[u]--; pending[u] == 0 {
				i, _ := slices.BinarySearch(ready, u)
				ready = slices.Insert(ready, i, u)
			}
		}
	}
	if len(order) < len(g.needs) {
		return nil, g.cycleError(pending)
	}
	return order, nil
}

// cycleError finds a cycle among the resources left unbuilt and reports
// it, starting at its alphabetically first member.
func (g *resourceGraph) cycleError(pending map[string]int) error {
	var start string
	for _, name := range sortedKeys(pending) {
		if pending[name] > 0 {
			start = name
			break
		}
	}
	seen := map[string]int{}
	var walk []string
	cur := start
	for {
		if i, ok := seen[cur]; ok {
			walk = walk[i:]
			break
		}
		seen[cur] = len(walk)
		walk = append(walk, cur)
		for _, t := range g.needs[cur] {
			if pending[t] > 0 {
				cur = t
				break
			}
		}
	}
	first := 0
	for i, name := range walk {
		if name < walk[first] {
			first = i
		}
	}
	cycle := append(append([]string{}, walk[first:]...), walk[:first]...)
	cycle = append(cycle, cycle[0])
	path := childPath("resources", cycle[0])
	return g.doc.invalid(path, g.roleTo(cycle[0], cycle[1]), "dependency cycle: %s", strings.Join(cycle, " -> "))
}

// roleTo returns the path of the first dep of from that names to.
func (g *resourceGraph) roleTo(from, to string) string {
	deps := g.doc.Resources[from].Deps
	for _, role := range sortedKeys(deps) {
		if t, _ := splitRef(deps[role]); t == to {
			return childPath(childPath("resources", from)+".deps", role)
		}
	}
	return ""
}
