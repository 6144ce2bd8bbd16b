// ask asks the user a question and waits for the answer (host.askUser).
// An interrupt while it waits ends the run as interrupted.
const reply = host.askUser({parts: [{type: "text", text: "What should I call you?"}]});
const answer = reply.parts.filter(p => p.type === "text").map(p => p.text).join("").trim();
board.setVar("answer", answer);
board.setVar("name", answer === "" ? "friend" : answer);
