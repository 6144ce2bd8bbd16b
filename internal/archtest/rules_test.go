package archtest

// The layers, bottom up (docs/architecture.md): fault; the contracts
// (runtime/message, event, resource, agent, limit, tool, model and the
// delegation contracts); the runtime's services (deploy, session,
// workspace, checkpoint, the delegation implementation) and package
// runtime; the sandbox contract, hostabi and the runners sandbox/js and
// sandbox/wasm; the engines; the command; the examples.
//
// Patterns are Go package patterns relative to the module: "runtime" is
// the package runtime alone, "runtime/..." it and every package below it,
// "..." every package of the module. A pattern whose first element holds a
// dot is a full import path ("github.com/dop251/goja/..."), and "std:" names
// a package of the standard library ("std:reflect").

// rule says that no package of pkgs, but those of except, reaches a
// package of forbid: as any dependency, direct or not, or only as a direct
// import when direct is set.
type rule struct {
	name   string
	pkgs   []string
	except []string
	forbid []string
	direct bool
	why    string
}

// What only the runtime and the engines may use: the session manager and
// the delegation implementation.
var sessionsAndDelegation = []string{
	"runtime/session/...", "runtime/delegation/local/...", "runtime/delegation/hostwrap/...",
}

// The runtime's services and package runtime, above the contracts.
var runtimeServices = append([]string{
	"runtime", "runtime/deploy/...", "runtime/workspace/...", "runtime/checkpoint/...",
}, sessionsAndDelegation...)

// What a library package never depends on.
var programs = []string{"cmd/...", "examples/..."}

// builtin registers every factory Corral ships, the runners included: it
// stands with the programs.
const builtin = "builtin"

// replaytest is the test helper of package replay: it builds documents
// with every factory (builtin), as a test of a whole deployment does.
const replaytest = "replay/replaytest"

// The NATS client and server, and the package that carries Corral onto
// them.
const (
	natsModules = "github.com/nats-io/..."
	natsPkgs    = "nats/..."
)

const (
	goja   = "github.com/dop251/goja/..."
	regexp = "github.com/dlclark/regexp2/..." // goja's regular expressions
	wazero = "github.com/tetratelabs/wazero/..."
)

// rules are the layering of DESIGN §1 as the test checks it.
var rules = []rule{{
	name:   "fault",
	pkgs:   []string{"fault"},
	forbid: []string{"..."},
	why:    "fault is the bottom: every package shares its error kinds, it uses nothing of the module",
}, {
	name: "contracts",
	pkgs: []string{
		"runtime/message", "runtime/event", "runtime/resource", "runtime/agent", "runtime/limit",
		"runtime/tool", "runtime/model", "runtime/delegation", "internal/...",
	},
	forbid: cat(runtimeServices, []string{"hostabi/...", "sandbox/...", "engine/..."}, programs),
	why: "the contracts are the bottom layer (message, event, resource, agent <- deploy, session, " +
		"checkpoint <- runtime); the delegation contracts know no implementation of them",
}, {
	name:   "services",
	pkgs:   []string{"runtime/deploy/...", "runtime/session/...", "runtime/workspace/...", "runtime/checkpoint/..."},
	forbid: []string{"runtime"},
	why:    "deploy, session, workspace and checkpoint sit below package runtime, which assembles them",
}, {
	name:   "runtime",
	pkgs:   []string{"runtime/..."},
	forbid: cat([]string{"engine/...", "hostabi/...", "sandbox/..."}, programs),
	why: "the runtime never imports an engine and knows no sandbox: engines register through " +
		"resource factories, and bind script runners as resources",
}, {
	name:   "hostabi",
	pkgs:   []string{"hostabi/..."},
	forbid: cat(runtimeServices, []string{"sandbox/js/...", "sandbox/wasm/...", "engine/..."}, programs),
	why: "hostabi depends only on agent, event, the delegation contracts and the sandbox contract; " +
		"never on the session manager or the delegation implementation",
}, {
	name:   "sandbox-contract",
	pkgs:   []string{"sandbox"},
	forbid: []string{"hostabi/...", "sandbox/js/...", "sandbox/wasm/..."},
	why:    "the runner contract is below hostabi and the runners that implement it",
}, {
	name:   "runners",
	pkgs:   []string{"sandbox/..."},
	forbid: cat(runtimeServices, []string{"engine/..."}, programs),
	why: "runners know no sessions and no engine: they run one call, and reach the world only " +
		"through the host ABI",
}, {
	name:   "goja-imports",
	pkgs:   []string{"..."},
	except: []string{"sandbox/js/..."},
	forbid: []string{goja, regexp},
	direct: true,
	why:    "goja appears only in sandbox/js",
}, {
	name:   "wazero-imports",
	pkgs:   []string{"..."},
	except: []string{"sandbox/wasm/..."},
	forbid: []string{wazero},
	direct: true,
	why:    "wazero appears only in sandbox/wasm",
}, {
	name:   "goja-builds",
	pkgs:   []string{"..."},
	except: cat([]string{"sandbox/js/...", builtin, replaytest}, programs),
	forbid: []string{goja, regexp},
	why:    "a build that leaves sandbox/js out has no goja: only the programs that register it (and builtin, which registers every factory for them) pull it in",
}, {
	name:   "wazero-builds",
	pkgs:   []string{"..."},
	except: cat([]string{"sandbox/wasm/...", builtin, replaytest}, programs),
	forbid: []string{wazero},
	why:    "a build that leaves sandbox/wasm out has no wazero: only the programs that register it (and builtin, which registers every factory for them) pull it in",
}, {
	name:   "builtin",
	pkgs:   []string{"..."},
	except: cat([]string{builtin, replaytest}, programs),
	forbid: []string{builtin},
	why: "builtin registers every factory, both runners included, for programs; a library package that " +
		"imported it would carry goja and wazero into every build that uses the library",
}, {
	name:   "replay",
	pkgs:   []string{"replay/..."},
	forbid: programs,
	why: "replay is a library above the runtime and the engines: commands and servers use it, " +
		"it uses none of them",
}, {
	name:   "builtin-programs",
	pkgs:   []string{builtin},
	forbid: programs,
	why:    "builtin is a library for programs: it depends on no command and no example",
}, {
	name:   "examples",
	pkgs:   []string{"..."},
	except: []string{"examples/..."},
	forbid: []string{"examples/..."},
	why: "examples are leaves: no library package and no command depends on one (the demo that " +
		"corral embeds is cmd/corral/internal/demo)",
}, {
	name:   "observe",
	pkgs:   []string{"observe/..."},
	forbid: cat([]string{"engine/...", "hostabi/...", "sandbox/js/...", "sandbox/wasm/...", builtin}, programs),
	why: "observe reads a runtime's events and the worker hook of sandbox/proc: it knows no engine and no " +
		"runner, so a program that mounts it carries neither",
}, {
	name:   "observe-users",
	pkgs:   []string{"fault", "runtime/...", "hostabi/...", "sandbox/...", "engine/...", builtin},
	forbid: []string{"observe/..."},
	why:    "the runtime and the libraries never import observe: a program (a server, a CLI) attaches it to a runtime",
}, {
	name:   "serve",
	pkgs:   []string{"..."},
	except: cat([]string{"serve/..."}, programs),
	forbid: []string{"serve/..."},
	why:    "serve is a product built on the library: the runtime and every library package stay transport-neutral and never import it",
}, {
	name:   "serve-layers",
	pkgs:   []string{"serve/..."},
	forbid: cat([]string{"engine/...", "hostabi/...", "sandbox/...", builtin}, programs),
	why:    "serve hosts a built Runtime: it knows no engine and no sandbox (the program that builds the runtime registers them)",
}, {
	name:   "nats",
	pkgs:   []string{natsPkgs},
	forbid: cat([]string{"runtime", "hostabi/...", "sandbox/...", "engine/...", builtin}, programs),
	why: "the nats package implements the event bus and session ownership contracts and registers " +
		"through a resource factory; it knows no runtime assembly, sandbox or engine",
}, {
	name:   "nats-imports",
	pkgs:   []string{"..."},
	except: []string{natsPkgs},
	forbid: []string{natsModules},
	direct: true,
	why:    "the NATS client and server are imported only by the nats package (and its test servers)",
}, {
	name:   "nats-free runtime",
	pkgs:   []string{"runtime/..."},
	forbid: []string{natsModules, natsPkgs},
	why: "the runtime and its contracts know no NATS: a deployment reaches it through the event.Bus/nats " +
		"resource, so a build without it carries none",
}, {
	name:   "plain sandbox contract",
	pkgs:   []string{"sandbox"},
	forbid: []string{"std:reflect"},
	direct: true,
	why: "the sandbox contract carries plain values and trusts nothing it cannot check " +
		"(docs/RATIONALE.md): it needs no reflection",
}}

// cat joins pattern lists.
func cat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}
