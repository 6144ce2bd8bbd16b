// Greets; the second statement lacks its value.
const greeting = "hello";
const name = ;
host.emit("token", greeting);
