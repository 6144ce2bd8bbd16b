// roll reads the clock and the random source, asks who rolls, and says
// what came up.
const now = host.now();
const die = Math.floor(host.random() * 6) + 1;
const who = host.askUser({parts: [{type: "text", text: "Who rolls?"}]}).parts.map(p => p.text).join("");
const second = Math.floor(Math.random() * 6) + 1;
const stamp = new Date().toISOString();
board.setVar("rolled", [die, second]);
board.setVar("at", now.iso);
host.emit("token", who + " rolled " + die + " and " + second + " at " + stamp + "\n");
board.appendChannel(board.MAIN_CHANNEL, {role: "user", parts: [{type: "text", text: who + " rolled " + die + " and " + second}]});
