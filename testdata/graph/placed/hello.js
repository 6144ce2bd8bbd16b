host.emit("token", "hello");
