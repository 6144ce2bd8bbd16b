// calculate computes config.a config.op config.b. The schema has already
// checked the arguments; a division by zero is an error result the model
// reads.
const {a, op, b} = config;
if (op === "/" && b === 0) {
  signal.error({kind: "validation", message: "division by zero"});
}
switch (op) {
  case "+": return a + b;
  case "-": return a - b;
  case "*": return a * b;
  default: return a / b;
}
