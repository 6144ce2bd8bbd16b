// listen takes every message steered to the turn so far and folds what the
// user said during the turn (the answer to "ask", then the steered lines)
// into the conversation on the main channel as one user message, one line
// each, for the model to read.
const steered = host.drainSteer();
const texts = steered.map(m => m.parts.filter(p => p.type === "text").map(p => p.text).join(""));
board.setVar("steered", texts);
const said = (board.getVar("answer") === "" ? [] : [board.getVar("answer")]).concat(texts);
if (said.length > 0) {
  board.appendChannel(board.MAIN_CHANNEL, {role: "user", parts: [{type: "text", text: said.join("\n")}]});
}
