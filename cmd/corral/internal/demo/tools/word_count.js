// word_count counts the words of a text and lists them. The model calls
// it; its result goes back to the model as a tool message.
const words = config.text.split(/\s+/).filter(w => w !== "");
return words.length + (words.length === 1 ? " word: " : " words: ") + words.join(", ");
