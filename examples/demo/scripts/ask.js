// ask asks the user a question and waits for the answer (host.askUser).
// An interrupt while it waits ends the run as interrupted.
const reply = host.askUser({parts: [{type: "text", text: "What should I call you?"}]});
const name = reply.parts.filter(p => p.type === "text").map(p => p.text).join("").trim();
board.setVar("name", name === "" ? "friend" : name);
