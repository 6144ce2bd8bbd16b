// reply streams the closing line, which uses the user's answer and the
// steered lines, and appends it to the conversation. It says whether a
// model node answered before it (the "draft" var its output_key writes).
const name = board.getVar("name");
const steered = board.getVar("steered") || [];
let text = board.hasVar("draft")
  ? "That was the scripted model calling a JavaScript tool. Nice to meet you, " + name + "."
  : "Nice to meet you, " + name + ".";
if (steered.length > 0) {
  text += " While I ran you told me: " + steered.map(s => JSON.stringify(s)).join(", ") + ".";
}
const turns = board.channel(board.MAIN_CHANNEL).length;
text += " The conversation holds " + turns + (turns === 1 ? " message." : " messages.");
// The model's streamed text ends without a line break: start a new line.
if (board.hasVar("draft") && !board.getVar("draft").endsWith("\n")) {
  host.emit("token", "\n");
}
const words = text.split(" ");
words.forEach((w, i) => host.emit("token", i < words.length - 1 ? w + " " : w + "\n"));
board.appendChannel(board.MAIN_CHANNEL, {role: "assistant", parts: [{type: "text", text: text}]});
