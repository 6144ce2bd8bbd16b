// reply streams the answer and appends it to the conversation.
const name = board.getVar("name");
const steered = board.getVar("steered") || [];
const turns = board.channel(board.MAIN_CHANNEL).length;
let text = board.hasVar("draft") ? board.getVar("draft") : "Nice to meet you, " + name + ".";
if (steered.length > 0) {
  text += " While I ran you told me: " + steered.map(s => JSON.stringify(s)).join(", ") + ".";
}
text += " The conversation holds " + turns + (turns === 1 ? " message." : " messages.");
const words = text.split(" ");
words.forEach((w, i) => host.emit("token", i < words.length - 1 ? w + " " : w + "\n"));
board.appendChannel(board.MAIN_CHANNEL, {role: "assistant", parts: [{type: "text", text: text}]});
