// Greets, but a value is missing on line 3.
const greeting = "hello";
const name = ;
host.emit("token", greeting);
