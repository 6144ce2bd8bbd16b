package sandboxtest

import "github.com/corral-rt/corral/sandbox"

// ProgramsFor returns the suite's programs for the runtime called name:
// JSPrograms for "js"; nil (every case skipped) for a runtime the suite
// has no programs for yet. A runner whose programs live elsewhere passes
// them to RunPrograms.
func ProgramsFor(name string) Programs {
	if name == "js" {
		return JSPrograms()
	}
	return nil
}

func js(src string) sandbox.Script { return sandbox.Script{Source: src} }

// JSPrograms returns the suite's programs in JavaScript: each is the body
// of a node script, or for the expr_ programs an expression for Eval.
func JSPrograms() Programs {
	p := Programs{
		"noop":                  js(``),
		"emit":                  js(`host.emit("token", "hello")`),
		"call_refused_uncaught": js(`host.publish("greeting", {text: "hi"})`),
		"call_refused": js(`
			try { host.publish("greeting", {}); board.setVar("reached", true) }
			catch (e) { board.setVar("code", e.code); board.setVar("message", e.message) }`),
		"now_caught": js(`
			try { board.setVar("now", Date.now()) } catch (e) { board.setVar("code", e.code) }`),
		"bad_args": js(`
			const codes = {};
			const attempt = (name, f) => { try { f(); codes[name] = "ok" } catch (e) { codes[name] = e.code } };
			attempt("emit_no_type", () => host.emit());
			attempt("emit_type_number", () => host.emit(42, "x"));
			attempt("log_bad_level", () => host.log("loud", "x"));
			attempt("log_no_message", () => host.log("info"));
			attempt("publish_wildcard", () => host.publish("a.*", 1));
			attempt("publish_tail_wildcard", () => host.publish("a.>", 1));
			attempt("publish_empty_segment", () => host.publish("a..b", 1));
			attempt("publish_empty", () => host.publish("", 1));
			attempt("publish_extra_arg", () => host.publish("a", 1, 2));
			attempt("usage_bad_shape", () => host.reportUsage({input: "many"}));
			board.setVar("codes", codes);`),
		"host_names":            js(`board.setVar("names", Object.keys(host).sort())`),
		"publish":               js(`host.publish("greeting", {text: "hi"}); host.publish("agent.run.other.end", {forged: true})`),
		"signal_done":           js(`board.setVar("before", 1); signal.done(); board.setVar("after", 1)`),
		"signal_done_in_try":    js(`try { signal.done() } catch (e) { board.setVar("caught", 1) } finally { board.setVar("finally", 1) }`),
		"signal_interrupt":      js(`signal.interrupt({kind: "user_input", message: "need input"}); board.setVar("after", 1)`),
		"signal_interrupt_text": js(`signal.interrupt("wait for me")`),
		"signal_error":          js(`signal.error({kind: config.kind, message: "it failed", detail: {code: 7}})`),
		"signal_error_text":     js(`signal.error("plain failure")`),
		"throw":                 js(`throw new Error("boom")`),
		"syntax_error":          js(`this is not javascript`),
	}
	addLimitPrograms(p)
	addStatePrograms(p)
	addBoardPrograms(p)
	addExprPrograms(p)
	return p
}

func addLimitPrograms(p Programs) {
	p["loop"] = js(`for (;;) {}`)
	p["loop_in_catch"] = js(`
			for (;;) { try { throw new Error("again") } catch (e) { continue } finally { continue } }`)
	p["recurse"] = js(`function f(n) { return f(n + 1) + 1 } f(0)`)
	p["recurse_catch"] = js(`function f() { try { return f() } catch (e) { return f() } } f()`)
	p["double_string"] = js(`let s = "x"; for (;;) { s = s + s }`)
	p["grow_array"] = js(`const a = []; for (let i = 0; ; i++) { a.push({i: i, items: new Array(256).fill(i), s: "item " + i}) }`)
	p["big_var"] = js(`board.setVar("big", "x".repeat(config.size))`)
	p["big_arg"] = js(`host.emit("token", "x".repeat(config.size))`)
	p["event_flood"] = js(`for (let i = 0; i < 100000; i++) { try { host.emit("token", "t" + i) } catch (e) {} }`)
}

func addStatePrograms(p Programs) {
	p["deterministic"] = js(`
			board.setVar("now", Date.now());
			board.setVar("iso", new Date().toISOString());
			board.setVar("random", [Math.random(), Math.random()]);
			board.setVar("host_now", host.now());
			board.setVar("host_random", host.random());
			host.emit("token", "t" + Math.floor(Math.random() * 1000));
			host.publish("state", {r: Math.random()});`)
	p["utc_dates"] = js(`
			const d = new Date(2024, 0, 2, 3, 4, 5);
			board.setVar("dates", {
				string: d.toString(), hours: d.getHours(), offset: d.getTimezoneOffset(),
				parsed: new Date("2024-01-02T03:04:05").toISOString(),
				same: Date.UTC(2024, 0, 2, 3, 4, 5) === d.getTime(),
			});`)
	p["pollute"] = js(`
			globalThis.leaked = "yes"; var leakedVar = 1;
			Object.prototype.polluted = "yes";
			Array.prototype.push = function () { return "hijacked" };
			JSON.stringify = () => "hijacked"; Math.floor = () => 42;
			board.setVar("polluted", true)`)
	p["inspect"] = js(`
			board.setVar("seen", {
				leaked: typeof leaked, leakedVar: typeof leakedVar,
				polluted: ({}).polluted === undefined ? "no" : "yes",
				push: [1].push(2), stringify: JSON.stringify({a: 1}), floor: Math.floor(1.5),
			})`)
	p["concurrent"] = js(`
			globalThis.who = config.id;
			let x = 0; for (let i = 0; i < 20000; i++) { x += i }
			board.setVar("who", globalThis.who); board.setVar("id", config.id)`)
}

func addBoardPrograms(p Programs) {
	p["board_vars"] = js(`
		board.setVar("n", 1);
		board.setVar("obj", {a: [1, "two", null], b: true});
		board.setVar("gone", 1); board.deleteVar("gone");
		board.setVar("has", [board.hasVar("n"), board.hasVar("gone"), board.hasVar("seed")]);
		board.setVar("seed_plus", board.getVar("seed") + 1);
		board.setVar("keys", Object.keys(board.getVars()).sort());
		board.setVar("missing", board.getVar("nope") === undefined);`)
	p["board_copy"] = js(`
		const o = board.getVar("obj"); o.a = "changed";
		board.setVar("unchanged", board.getVar("obj").a);
		o.a = "written"; board.setVar("obj", o);`)
	p["board_channels"] = js(`
		board.setVar("empty", board.channel("nothing").length);
		board.setChannel("side", [{role: "user", parts: [{type: "text", text: "a"}]}]);
		board.appendChannel("side", {role: "assistant", parts: [{type: "text", text: "b"}]});
		board.appendChannel(board.MAIN_CHANNEL, [{role: "user", parts: [{type: "text", text: "c"}]}]);
		board.setVar("main", board.MAIN_CHANNEL);
		board.setVar("side_texts", board.channel("side").map(m => m.parts[0].text));`)
	p["board_invalid_messages"] = js(`
		const codes = [];
		const bad = [
			{role: "robot", parts: [{type: "text", text: "x"}]},
			{role: "user", parts: []},
			{role: "user", parts: [{type: "text", text: "x"}], extra: 1},
			[{role: "user", parts: [{type: "text", text: "ok"}]}, {role: "user"}],
			"text",
		];
		for (const m of bad) { try { board.appendChannel("side", m) } catch (e) { codes.push(e.code) } }
		try { board.setChannel("side", {role: "user", parts: [{type: "text", text: "x"}]}) } catch (e) { codes.push(e.code) }
		board.setVar("codes", codes);
		board.setVar("side", board.channel("side").length);`)
	p["board_reserved"] = js(`
		const codes = [];
		try { board.setVar("__iterations", 1) } catch (e) { codes.push(e.code) }
		try { board.setChannel("__other", []) } catch (e) { codes.push(e.code) }
		board.setVar("codes", codes);`)
	p["board_resolve"] = js(`
		board.setVar("typed", board.resolve("${board.obj.n}"));
		board.setVar("str", board.resolveString("n=${board.obj.n}"));
		board.setVar("def", board.resolve("${board.nope:42}"));
		try { board.resolve("${board.nope}") } catch (e) { board.setVar("code", e.code) }`)
	p["globals"] = js(`
		board.setVar("run", [run.get_run_id(), run.get_task_id(), run.get_agent_id(), run.get_context_id(), run.get_parent_run_id()]);
		board.setVar("node", [node.id(), node.type()]);
		board.setVar("config", config.greeting);
		try { config.greeting = "changed" } catch (e) {}
		board.setVar("config_after", config.greeting);
		board.setVar("frozen", Object.isFrozen(config));
		board.setVar("cancel", parallel.cancelNode("other", "because"));`)
	p["steer"] = js(`board.appendChannel(board.MAIN_CHANNEL, host.drainSteer())`)
}

func addExprPrograms(p Programs) {
	p["expr_condition"] = js(`tool_pending == true && count > 2`)
	p["expr_value"] = js(`({doubled: count * 2, list: [name, count], none: null})`)
	p["expr_missing"] = js(`typeof not_set === "undefined" && not_set === undefined`)
	p["expr_loop"] = js(`(() => { for (;;) {} })()`)
	p["expr_recurse"] = js(`(function f() { return f() })()`)
	p["expr_pollute"] = js(`(Object.prototype.polluted = "yes", globalThis.leaked = 1, true)`)
	p["expr_inspect"] = js(`({}).polluted === undefined && typeof leaked === "undefined"`)
	p["expr_syntax"] = js(`count >`)
	p["expr_statements"] = js(`1); (2`)
}
