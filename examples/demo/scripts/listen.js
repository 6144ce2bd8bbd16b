// listen takes every message steered to the turn so far and adds it to
// the conversation on the main channel.
const steered = host.drainSteer();
board.appendChannel(board.MAIN_CHANNEL, steered);
const texts = steered.map(m => m.parts.filter(p => p.type === "text").map(p => p.text).join(""));
board.setVar("steered", texts);
