// Counts its runs, so that a test can tell a resumed run did not greet
// again, and streams the greeting.
board.setVar("greet_runs", (board.getVar("greet_runs") || 0) + 1);
host.emit("token", config.greeting);
