// The console page. Everything the server sends (agent names, model
// output, prompts, event payloads) is put on the page as text
// (textContent, text nodes), never as markup.
import { Api, ApiError } from "./api.js";

const KEY = "corral.key"; // sessionStorage: this tab only, never in a URL
const $ = (id) => document.getElementById(id);

// el makes an element with properties (textContent, className, dataset…)
// and children (elements or strings, added as text nodes).
function el(tag, props = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "dataset") Object.assign(e.dataset, v);
    else e[k] = v;
  }
  for (const c of children) e.append(c);
  return e;
}

const describe = (e) => (e instanceof ApiError ? e.describe() : String(e?.message ?? e));
const seg = encodeURIComponent;
const textOf = (parts) => (Array.isArray(parts) ? parts : [])
  .filter((p) => p && p.type === "text").map((p) => String(p.text ?? "")).join("");
const clip = (s, n = 400) => (s.length > n ? `${s.slice(0, n)}…` : s);

const state = {
  api: null,
  session: null, // {id, agent, …}
  turn: null, // turn id
  follow: null, // AbortController of the turn's stream
};

function show(signedIn) {
  $("signin").hidden = signedIn;
  $("app").hidden = !signedIn;
  $("signout").hidden = !signedIn;
}

function setError(id, e) {
  $(id).textContent = e ? describe(e) : "";
}

async function signIn(key) {
  setError("signin-error", null);
  const api = new Api(key);
  let agents;
  try {
    agents = await api.call("GET", "/api/agents");
  } catch (e) {
    sessionStorage.removeItem(KEY);
    show(false);
    const prefix = e instanceof ApiError && e.status === 401 ? "The key was refused: " : "Cannot sign in: ";
    $("signin-error").textContent = prefix + describe(e);
    return;
  }
  sessionStorage.setItem(KEY, key);
  state.api = api;
  $("key").value = "";
  $("whoami").textContent = "signed in";
  show(true);
  renderAgents(agents?.agents ?? []);
  await loadSessions();
}

function signOut() {
  sessionStorage.removeItem(KEY);
  state.follow?.abort();
  Object.assign(state, { api: null, session: null, turn: null, follow: null });
  for (const id of ["agents", "sessions", "turns", "timeline", "prompts"]) $(id).replaceChildren();
  $("session").hidden = true;
  $("whoami").textContent = "";
  show(false);
}

// guard runs fn and shows its error in the element of id errId; a 401
// (the key was revoked) signs out.
async function guard(errId, fn) {
  setError(errId, null);
  try {
    return await fn();
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      signOut();
      $("signin-error").textContent = `The key was refused: ${describe(e)}`;
      return undefined;
    }
    setError(errId, e);
    return undefined;
  }
}

function renderAgents(agents) {
  $("agents").replaceChildren(...agents.map((a) => {
    const open = el("button", { type: "button", className: "small", textContent: "Open session" });
    open.addEventListener("click", () => guard("app-error", async () => {
      const body = { agent: a.id };
      const ctx = $("context-id").value.trim();
      if (ctx) body.context_id = ctx;
      const s = await state.api.call("POST", "/api/sessions", body);
      await loadSessions();
      await selectSession(s);
    }));
    const name = a.card?.name && a.card.name !== a.id ? `${a.card.name} (${a.id})` : a.id;
    return el("li", { dataset: { agent: a.id }, title: String(a.card?.description ?? "") }, el("span", {}, name), open);
  }));
}

async function loadSessions() {
  await guard("app-error", async () => {
    const r = await state.api.call("GET", "/api/sessions");
    const sessions = r?.sessions ?? [];
    $("sessions").replaceChildren(...sessions.map((s) => {
      const b = el("button", { type: "button", className: "link" }, `${s.agent} · ${s.id}`);
      b.addEventListener("click", () => selectSession(s));
      return el("li", { dataset: { session: s.id }, className: s.id === state.session?.id ? "selected" : "" }, b);
    }));
  });
}

async function selectSession(s) {
  state.session = s;
  for (const li of $("sessions").children) li.classList.toggle("selected", li.dataset.session === s.id);
  $("session-id").textContent = s.id;
  $("session-agent").textContent = s.agent;
  $("session").hidden = false;
  closeTurn();
  const turns = await loadTurns();
  if (turns && turns.length > 0) await openTurn(turns[turns.length - 1].id);
}

const sessionPath = () => `/api/sessions/${seg(state.session.id)}`;
const turnPath = () => `${sessionPath()}/turns/${seg(state.turn)}`;

async function loadTurns() {
  return guard("app-error", async () => {
    const r = await state.api.call("GET", `${sessionPath()}/turns`);
    const turns = r?.turns ?? [];
    $("turns").replaceChildren(...turns.map((t) => {
      const b = el("button", { type: "button", className: "link" }, `${t.id}`);
      b.addEventListener("click", () => openTurn(t.id));
      return el("li", { dataset: { turn: t.id }, className: t.id === state.turn ? "selected" : "" },
        b, el("span", { className: "status" }, String(t.status)));
    }));
    return turns;
  });
}

function closeTurn() {
  state.follow?.abort();
  state.follow = null;
  state.turn = null;
  $("turn").hidden = true;
}

// openTurn shows turn tid and follows its event stream from the start.
async function openTurn(tid) {
  closeTurn();
  state.turn = tid;
  for (const li of $("turns").children) li.classList.toggle("selected", li.dataset.turn === tid);
  $("turn-id").textContent = tid;
  $("turn-status").textContent = "";
  $("turn-output").textContent = "";
  $("turn-result").textContent = "";
  $("turn-message").textContent = "";
  setError("turn-error", null);
  $("prompts").replaceChildren();
  $("timeline").replaceChildren();
  $("turn").hidden = false;
  const view = await guard("turn-error", () => state.api.call("GET", turnPath()));
  if (view) setStatus(view.status);
  const ctl = new AbortController();
  state.follow = ctl;
  const path = `${turnPath()}/events`;
  const isCurrent = () => state.follow === ctl;
  guard("turn-error", () => state.api.follow(path, {
    signal: ctl.signal,
    onState: (s) => { if (isCurrent()) $("stream-state").textContent = s; },
    onEvent: (ev) => { if (isCurrent()) onEvent(tid, ev); },
  }));
}

function setStatus(status) {
  $("turn-status").textContent = String(status ?? "");
  $("turn-status").dataset.status = String(status ?? "");
}

const MAX_TIMELINE = 2000;

// follows keeps a scrolled box at its end while new lines arrive, unless
// the reader scrolled up.
function follows(box) {
  const atEnd = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
  return () => { if (atEnd) box.scrollTop = box.scrollHeight; };
}

function onEvent(tid, ev) {
  const keepOutput = follows($("turn-output"));
  const keepTimeline = follows($("timeline"));
  let data = null;
  try {
    data = JSON.parse(ev.data);
  } catch {
    data = ev.data;
  }
  let summary = ev.data;
  switch (ev.event) {
    case "delta":
      if (data?.part?.type === "text") {
        $("turn-output").append(String(data.part.text ?? ""));
        summary = `text ${JSON.stringify(data.part.text ?? "")}`;
      }
      break;
    case "prompt":
      addPrompt(data);
      summary = `prompt ${data?.prompt_id}: ${textOf(data?.prompt?.parts)}`;
      break;
    case "prompt_resolved":
      for (const p of $("prompts").querySelectorAll(".prompt")) {
        if (p.dataset.prompt === String(data?.prompt_id)) p.remove();
      }
      break;
    case "event":
      summary = `${data?.subject ?? ""} ${data?.payload === undefined ? "" : JSON.stringify(data.payload)}`;
      break;
    case "end":
      setStatus(data?.status);
      $("prompts").replaceChildren();
      showResult(tid);
      break;
    default:
      break;
  }
  const tl = $("timeline");
  tl.append(el("li", { dataset: { id: String(ev.id ?? ""), type: ev.event } },
    el("span", { className: "type" }, `${ev.id ?? "-"} ${ev.event}`), clip(String(summary))));
  while (tl.childElementCount > MAX_TIMELINE) tl.firstElementChild.remove();
  keepOutput();
  keepTimeline();
}

function addPrompt(p) {
  if (!p?.prompt_id) return;
  const id = String(p.prompt_id);
  const input = el("input", { type: "text", required: true, placeholder: "Your answer" });
  const form = el("form", { autocomplete: "off" }, input, el("button", { type: "submit" }, "Answer"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    guard("turn-error", async () => {
      await state.api.call("POST", `${turnPath()}/prompts/${seg(id)}`, { text: input.value });
      $("turn-message").textContent = `Answer sent to prompt ${id}`;
      input.value = "";
    });
  });
  $("prompts").append(el("div", { className: "prompt", dataset: { prompt: id } },
    el("p", {}, textOf(p.prompt?.parts) || "(the agent asks for input)"), form));
}

async function showResult(tid) {
  const view = await guard("turn-error", () => state.api.call("GET", `${turnPath()}/wait?timeout=30s`));
  if (!view || state.turn !== tid) return;
  setStatus(view.status);
  const lines = [`status: ${view.status}`];
  if (view.text !== undefined) lines.push(`text: ${view.text}`);
  if (view.undelivered_steer) lines.push(`undelivered steer: ${view.undelivered_steer}`);
  if (view.error) lines.push(`error: ${view.error.kind}: ${view.error.message}`);
  if (view.usage) lines.push(`usage: ${JSON.stringify(view.usage)}`);
  $("turn-result").textContent = lines.join("\n");
  loadTurns();
}

function bind() {
  $("signin-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const key = $("key").value.trim();
    if (key) signIn(key);
  });
  $("signout").addEventListener("click", signOut);
  $("refresh").addEventListener("click", () => guard("app-error", async () => {
    const r = await state.api.call("GET", "/api/agents");
    renderAgents(r?.agents ?? []);
    await loadSessions();
  }));
  $("delete-session").addEventListener("click", () => guard("app-error", async () => {
    await state.api.call("DELETE", sessionPath());
    closeTurn();
    state.session = null;
    $("session").hidden = true;
    await loadSessions();
  }));
  $("turn-form").addEventListener("submit", (e) => {
    e.preventDefault();
    guard("app-error", async () => {
      const t = await state.api.call("POST", `${sessionPath()}/turns`, { text: $("turn-text").value });
      $("turn-text").value = "";
      await loadTurns();
      await openTurn(t.id);
    });
  });
  $("steer-form").addEventListener("submit", (e) => {
    e.preventDefault();
    guard("turn-error", async () => {
      const r = await state.api.call("POST", `${turnPath()}/steer`, { text: $("steer-text").value });
      $("steer-text").value = "";
      $("turn-message").textContent = `Steer queued (${r?.pending_steer ?? "?"} waiting)`;
    });
  });
  $("interrupt").addEventListener("click", () => guard("turn-error", async () => {
    await state.api.call("POST", `${turnPath()}/interrupt`, {});
    $("turn-message").textContent = "Interrupt requested";
  }));
  $("download").addEventListener("click", () => guard("turn-error", async () => {
    const { blob, name } = await state.api.download(`${turnPath()}/recording`);
    const url = URL.createObjectURL(blob);
    const a = el("a", { href: url, download: name ?? `${state.turn}.recording` });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
    $("turn-message").textContent = `Recording downloaded (${blob.size} bytes)`;
  }));
}

bind();
const saved = sessionStorage.getItem(KEY);
if (saved) signIn(saved);
else show(false);
document.body.dataset.ready = "true";
