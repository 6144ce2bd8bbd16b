// greet streams a greeting, one token at a time, to the turn's sinks.
const words = ["Hello!", "I", "am", "Corral's", "demo", "agent:", "a", "graph", "of",
  "sandboxed", "scripts,", "streaming", "to", "you", "as", "I", "run."];
words.forEach((w, i) => host.emit("token", i < words.length - 1 ? w + " " : w + "\n"));
