// Answers the last message of config.channel in upper case and counts the
// answers in the var config.count_key.
const msgs = board.channel(config.channel);
const text = config.prefix + msgs[msgs.length - 1].parts[0].text.toUpperCase();
host.emit("token", text);
board.appendChannel(config.channel, {role: "assistant", parts: [{type: "text", text: text}]});
board.setVar(config.count_key, (board.getVar(config.count_key) || 0) + 1);
