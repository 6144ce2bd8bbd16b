// Server-sent events read from a fetch() response body. EventSource cannot
// send an Authorization header, so the console reads the stream itself.

// readEvents yields each event of body (a ReadableStream of bytes) as
// {id, event, data}: id is the last "id:" field seen (or null), event
// defaults to "message", data lines are joined with "\n". It returns when
// the stream ends; a partial event at the end is dropped, as the
// specification says.
export async function* readEvents(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  let id = null;
  let type = "";
  let data = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += value;
      for (;;) {
        const nl = buf.search(/\r\n|\n|\r/);
        if (nl < 0) break;
        // A "\r" at the buffer's end may be the first half of "\r\n".
        if (buf[nl] === "\r" && nl === buf.length - 1) break;
        const line = buf.slice(0, nl);
        buf = buf.slice(buf.startsWith("\r\n", nl) ? nl + 2 : nl + 1);
        if (line === "") {
          if (data.length > 0 || type !== "") {
            yield { id, event: type || "message", data: data.join("\n") };
          }
          type = "";
          data = [];
          continue;
        }
        if (line.startsWith(":")) continue; // a comment
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let val = colon < 0 ? "" : line.slice(colon + 1);
        if (val.startsWith(" ")) val = val.slice(1);
        switch (field) {
          case "id": if (!val.includes("\0")) id = val; break;
          case "event": type = val; break;
          case "data": data.push(val); break;
          default: break; // "retry" and unknown fields are ignored
        }
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}
