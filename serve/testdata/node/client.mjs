// Drives corral serve with the official OpenAI Node client: lists the
// models, runs a completion and a streamed one, and checks a wrong key is
// refused. Prints one JSON object with what it saw; serve/node_test.go
// checks it. Usage: BASE_URL=http://host:port/v1 API_KEY=key node client.mjs
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.env.BASE_URL, apiKey: process.env.API_KEY, maxRetries: 0 });
const out = {};

const models = await client.models.list();
out.models = models.data.map((m) => m.id);

const done = await client.chat.completions.create({
  model: "echo",
  messages: [{ role: "system", content: "be brief" }, { role: "user", content: "hello there" }],
});
out.completion = { text: done.choices[0].message.content, finish: done.choices[0].finish_reason, usage: done.usage != null };

const stream = await client.chat.completions.create({
  model: "echo",
  messages: [{ role: "user", content: "streamed words" }],
  stream: true,
  stream_options: { include_usage: true },
});
let text = "";
let chunks = 0;
let finish = null;
let usage = false;
for await (const chunk of stream) {
  chunks++;
  if (chunk.usage) usage = true;
  for (const c of chunk.choices) {
    text += c.delta?.content ?? "";
    if (c.finish_reason) finish = c.finish_reason;
  }
}
out.stream = { text, chunks, finish, usage };

const withContext = await client.chat.completions.create(
  { model: "echo", messages: [{ role: "user", content: "remember" }] },
  { headers: { "X-Corral-Context-Id": "node-ctx" } },
);
const again = await client.chat.completions.create(
  { model: "echo", messages: [{ role: "user", content: "again" }] },
  { headers: { "X-Corral-Context-Id": "node-ctx" } },
);
out.context = [withContext.choices[0].message.content, again.choices[0].message.content];

try {
  await new OpenAI({ baseURL: process.env.BASE_URL, apiKey: "wrong", maxRetries: 0 }).models.list();
  out.wrongKey = "accepted";
} catch (e) {
  out.wrongKey = { status: e.status, type: e.error?.type ?? e.type };
}
try {
  await client.chat.completions.create({ model: "nobody", messages: [{ role: "user", content: "x" }] });
  out.unknownModel = "accepted";
} catch (e) {
  out.unknownModel = { status: e.status, code: e.code };
}

console.log(JSON.stringify(out));
