package main

import (
	"bufio"
	"io"
	"sync"
)

// maxLine bounds one line of input.
const maxLine = 1 << 20

// lineReader reads lines from r on a goroutine of its own and hands them
// over on Lines, which is closed at end of input or a read error (then
// Err says which). Stop tells the goroutine to hand nothing more over; it
// ends as soon as the read it is blocked in returns, and Done is closed
// when it has. (A read from a terminal or a pipe cannot be abandoned
// portably: a command that stops its reader and returns leaves the process
// to end it.)
type lineReader struct {
	lines chan string
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
	err   error // set before lines is closed
}

func startLines(r io.Reader) *lineReader {
	l := &lineReader{lines: make(chan string), stop: make(chan struct{}), done: make(chan struct{})}
	go l.read(r)
	return l
}

func (l *lineReader) read(r io.Reader) {
	defer close(l.done)
	defer close(l.lines)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	for sc.Scan() {
		select {
		case l.lines <- sc.Text():
		case <-l.stop:
			return
		}
	}
	l.err = sc.Err()
}

// Lines delivers the lines read, without their line ends.
func (l *lineReader) Lines() <-chan string { return l.lines }

// Err is the read error that ended the input, nil at end of input. Call it
// only after Lines is closed.
func (l *lineReader) Err() error { return l.err }

// Stop ends the hand-over; it is idempotent.
func (l *lineReader) Stop() { l.once.Do(func() { close(l.stop) }) }

// Done is closed when the reading goroutine has ended.
func (l *lineReader) Done() <-chan struct{} { return l.done }
