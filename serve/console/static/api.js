// The native API of corral serve, called with the tenant key as a bearer
// token. Nothing here touches the page.
import { readEvents } from "./sse.js";

// ApiError is a refused or failed call: the HTTP status (0 when the
// server was not reached), the error kind and the server's message.
export class ApiError extends Error {
  constructor(status, kind, message) {
    super(message);
    this.status = status;
    this.kind = kind;
  }

  // describe is the error as the console shows it.
  describe() {
    if (this.status === 0) return this.message;
    return `${this.status} ${this.kind}: ${this.message}`;
  }
}

// errorOf reads the native ({error: {kind, message}}) or OpenAI
// ({error: {type, message}}) error of a response, or its text.
async function errorOf(resp) {
  const text = await resp.text().catch(() => "");
  let kind = resp.statusText || "error";
  let message = text.trim() || `HTTP ${resp.status}`;
  try {
    const body = JSON.parse(text);
    if (body && typeof body.error === "object" && body.error !== null) {
      kind = String(body.error.kind ?? body.error.type ?? kind);
      message = String(body.error.message ?? message);
      if (body.error.quota) message += ` (quota ${body.error.quota})`;
    }
  } catch {
    // not JSON: the text is the message
  }
  return new ApiError(resp.status, kind, message);
}

const sleep = (ms, signal) => new Promise((resolve) => {
  const t = setTimeout(resolve, ms);
  signal?.addEventListener("abort", () => { clearTimeout(t); resolve(); }, { once: true });
});

// A permanent refusal is not retried by a stream: the key, the turn or
// the request is wrong.
const permanent = (status) => status >= 400 && status < 500 && status !== 408 && status !== 429;

export class Api {
  #key;

  constructor(key) {
    this.#key = key;
  }

  #init(method, extra = {}, signal) {
    return {
      method,
      headers: { Authorization: `Bearer ${this.#key}`, ...extra },
      cache: "no-store",
      credentials: "omit",
      referrerPolicy: "no-referrer",
      signal,
    };
  }

  // call sends a JSON request and returns the decoded answer (null for
  // 204), or throws an ApiError.
  async call(method, path, body) {
    const init = this.#init(method, body === undefined ? {} : { "Content-Type": "application/json" });
    if (body !== undefined) init.body = JSON.stringify(body);
    let resp;
    try {
      resp = await fetch(path, init);
    } catch (e) {
      throw new ApiError(0, "network", `${method} ${path}: ${e.message}`);
    }
    if (!resp.ok) throw await errorOf(resp);
    if (resp.status === 204) return null;
    const text = await resp.text();
    return text ? JSON.parse(text) : null;
  }

  // download fetches path as a Blob, with the file name the server
  // suggests (Content-Disposition) or null, or throws an ApiError.
  async download(path) {
    let resp;
    try {
      resp = await fetch(path, this.#init("GET"));
    } catch (e) {
      throw new ApiError(0, "network", `GET ${path}: ${e.message}`);
    }
    if (!resp.ok) throw await errorOf(resp);
    const disposition = resp.headers.get("Content-Disposition") ?? "";
    const m = /filename="?([^";]+)"?/i.exec(disposition);
    return { blob: await resp.blob(), name: m ? m[1] : null };
  }

  // follow reads the server-sent events of path, calling onEvent for each
  // in order, until the "end" event or until signal aborts. A dropped
  // connection is resumed with Last-Event-ID, so no event is lost or
  // repeated; onState hears "streaming", "reconnecting …" and "ended". It
  // throws an ApiError when the server refuses the stream for good.
  async follow(path, { onEvent, onState, signal }) {
    let last = 0;
    let delay = 250;
    let drops = 0;
    while (!signal.aborted) {
      const extra = { Accept: "text/event-stream" };
      if (last > 0) extra["Last-Event-ID"] = String(last);
      try {
        const resp = await fetch(path, this.#init("GET", extra, signal));
        if (!resp.ok) {
          const err = await errorOf(resp);
          if (permanent(resp.status)) throw err;
          onState(`reconnecting after ${err.describe()}`);
        } else {
          onState(drops > 0 ? `streaming (resumed after event ${last}, ${drops} reconnects)` : "streaming");
          for await (const ev of readEvents(resp.body)) {
            const id = Number(ev.id);
            if (Number.isInteger(id) && id > 0) {
              if (id <= last) continue; // already seen
              last = id;
            }
            delay = 250;
            onEvent(ev);
            if (ev.event === "end") {
              onState("ended");
              return;
            }
          }
          onState(`reconnecting after event ${last}: the stream closed early`);
        }
      } catch (e) {
        if (signal.aborted) return;
        if (e instanceof ApiError) throw e;
        onState(`reconnecting after event ${last}: ${e.message}`);
      }
      drops++;
      await sleep(delay, signal);
      delay = Math.min(delay * 2, 5000);
    }
  }
}
