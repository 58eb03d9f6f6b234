package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ingestd/ingestd/internal/rawjson"
)

// A pipe is a stdio upstream's connection, shared by two callers: the
// SDK's client session, which initialises it, lists its tools, hears its
// notifications and makes every call the lane does not; and the lane,
// which writes a tools/call as one line and reads its response as one
// line, without the SDK's JSON-RPC stack (goroutine hand-offs on both
// ends and several decodings of each message). The lane's requests
// carry ids of their own ("ingestd-N", a string; the SDK's are numbers),
// so their responses are told apart and never reach the SDK. A lane
// call is written by the goroutine that started it and finished by the
// one that reads its response (or by the pipe's expiry timer): no
// goroutine waits, and no call starts a timer of its own.
//
// Every line from the upstream is bounded: one longer than max is
// discarded to its end, and when its id is found at either end its call
// is answered with the cap at once. Every write to the upstream is
// bounded by writeWait: an upstream that stops reading its input is
// closed (and restarted on a later call) rather than left to stall its
// writers.
type pipe struct {
	cmd       *exec.Cmd
	stdin     *os.File
	raw       syscall.RawConn // stdin's, for the write that does not wait
	stdout    *os.File        // the read end
	r         *bufio.Reader
	max       int
	terminate time.Duration
	writeWait time.Duration
	meta      json.RawMessage // what the SDK's client puts in every request's _meta under the per-request protocol, nil under the classic one

	wmu sync.Mutex // one writer at a time, so lines never interleave

	mu      sync.Mutex
	next    uint64
	waiting map[string]*waiter
	gone    error       // set when the connection ended; every later call fails
	expiry  *time.Timer // ends the calls past their deadline
	fires   time.Time   // when it fires; zero when it is not armed

	pending []byte // the rest of a line for the SDK (its read goroutine only)
	once    sync.Once
	closed  error
}

// waiter is a lane call awaiting its response: done is called once, by
// whoever takes the waiter from the map first (the response, the expiry
// timer, the caller's cancel, the connection's end).
type waiter struct {
	done     func(result json.RawMessage, err error) // the result as the upstream wrote it
	deadline time.Time
	abandon  func(err error)
}

// lanePrefix starts every lane request's id.
const lanePrefix = "ingestd-"

// errClosed ends the calls waiting when the connection closes.
var errClosed = errors.New("the upstream's connection closed")

// pipeTransport starts the command on Connect and gives the SDK the
// pipe.
type pipeTransport struct{ p *pipe }

func newPipe(cmd *exec.Cmd, max int, writeWait time.Duration) *pipe {
	return &pipe{cmd: cmd, max: max, terminate: 2 * time.Second, writeWait: writeWait, waiting: map[string]*waiter{}}
}

func (t *pipeTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	p := t.p
	stdout, out, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	// Its reads block a thread of their own instead of parking on the
	// runtime's poller: the thread is woken by the upstream's write
	// itself, which answers a host sooner, at some CPU for the
	// scheduler's wakes while calls flow (docs/BENCHMARKS.md; the host's
	// side, stdin, stays on the poller, so the process idles between
	// calls). Closing it does not end a read under way; the upstream's
	// exit does, or, when a process it started holds the pipe, that
	// one's.
	stdout.Fd()
	p.cmd.Stdout, p.stdout = out, stdout
	// The input end is ingestd's own *os.File, so that writes can carry
	// a deadline.
	in, stdin, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	p.cmd.Stdin, p.stdin = in, stdin
	if p.raw, err = stdin.SyscallConn(); err != nil {
		return nil, err
	}
	err = p.cmd.Start()
	in.Close()
	out.Close()
	if err != nil {
		stdin.Close()
		stdout.Close()
		return nil, err
	}
	p.r = bufio.NewReaderSize(stdout, 64<<10)
	return (&mcp.IOTransport{Reader: p, Writer: p}).Connect(ctx)
}

// Read gives the SDK the upstream's lines that are not the lane's.
func (p *pipe) Read(b []byte) (int, error) {
	for len(p.pending) == 0 {
		line, err := p.readLine()
		if len(line) > 0 && !p.route(line) {
			p.pending = line
		}
		if err != nil {
			if len(p.pending) > 0 {
				break
			}
			p.fail(fmt.Errorf("%w: %v", errClosed, err))
			return 0, err
		}
	}
	n := copy(b, p.pending)
	p.pending = p.pending[n:]
	return n, nil
}

// Write writes one whole message (the SDK writes one a call), within
// writeWait. A write that did not finish may have left half a line: the
// connection is closed, its calls failed.
func (p *pipe) Write(b []byte) (int, error) {
	p.wmu.Lock()
	// One try first, which the pipe's free space nearly always takes
	// whole; only a write that would wait carries a deadline, so that
	// a call touches no timer.
	n := 0
	err := p.raw.Write(func(fd uintptr) bool {
		n, _ = syscall.Write(int(fd), b)
		n = max(n, 0)
		return true
	})
	if err == nil && n < len(b) {
		_ = p.stdin.SetWriteDeadline(time.Now().Add(p.writeWait))
		var m int
		m, err = p.stdin.Write(b[n:])
		n += m
		_ = p.stdin.SetWriteDeadline(time.Time{})
	}
	p.wmu.Unlock()
	if err != nil {
		err = fmt.Errorf("the upstream does not read its input: %w", err)
		go p.Close()
	}
	return n, err
}

// Close ends the upstream as MCP's stdio transport says: its stdin
// closed, then SIGTERM, then SIGKILL, each after a wait. The SDK closes
// both halves; the first does it.
func (p *pipe) Close() error {
	p.once.Do(func() {
		p.fail(errClosed)
		if p.stdin == nil {
			return
		}
		defer p.stdout.Close() // after the upstream ended: Wait leaves it to its owner
		_ = p.stdin.Close()
		done := make(chan error, 1)
		go func() { done <- p.cmd.Wait() }()
		for _, next := range []func() error{
			func() error { return p.cmd.Process.Signal(syscall.SIGTERM) },
			p.cmd.Process.Kill,
		} {
			select {
			case p.closed = <-done:
				return
			case <-time.After(p.terminate):
			}
			_ = next()
		}
		p.closed = <-done
	})
	return p.closed
}

// fail ends every waiting lane call with err; later calls fail too.
func (p *pipe) fail(err error) {
	p.mu.Lock()
	if p.gone == nil {
		p.gone = err
	}
	var ended []*waiter
	for id, w := range p.waiting {
		ended = append(ended, w)
		delete(p.waiting, id)
	}
	p.mu.Unlock()
	for _, w := range ended {
		w.done(nil, err)
	}
}

// take removes the call waiting on id; nil when none does (it ended).
func (p *pipe) take(id string) *waiter {
	p.mu.Lock()
	w := p.waiting[id]
	delete(p.waiting, id)
	p.mu.Unlock()
	return w
}

// answer ends the call waiting on id with its response or err.
func (p *pipe) answer(id string, resp *response, err error) {
	if w := p.take(id); w != nil {
		var result json.RawMessage
		if err == nil {
			result, err = resp.result()
		}
		w.done(result, err)
	}
}

// expire abandons the calls past their deadline and arms the timer for
// the next, if any call still waits.
func (p *pipe) expire() {
	now := time.Now()
	var late []*waiter
	var next time.Time
	p.mu.Lock()
	for _, w := range p.waiting {
		switch {
		case !now.Before(w.deadline):
			late = append(late, w)
		case next.IsZero() || w.deadline.Before(next):
			next = w.deadline
		}
	}
	if p.fires = next; !next.IsZero() {
		p.expiry.Reset(next.Sub(now))
	}
	p.mu.Unlock()
	for _, w := range late {
		w.abandon(context.DeadlineExceeded)
	}
}

// response is a JSON-RPC message from the upstream, read once: enough
// to tell a lane call's response and to decode its result. Its members
// are as written.
type response struct {
	ID     json.RawMessage `json:"id"`
	Method json.RawMessage `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// route takes a line that answers a lane call, true when it was one (or
// a late answer to one, dropped).
func (p *pipe) route(line []byte) bool {
	if !bytes.Contains(line, []byte(`"`+lanePrefix)) {
		return false
	}
	var v response
	if !rawjson.Members(line, func(k, val []byte) bool {
		switch string(k) {
		case "id":
			v.ID = val
		case "method":
			v.Method = val
		case "result":
			v.Result = val
		case "error":
			v.Error = val
		}
		return true
	}) {
		// Not strict JSON (invalid UTF-8, a member twice) is still read
		// as the SDK's decoder reads it, so that its call is answered.
		if v = (response{}); json.Unmarshal(line, &v) != nil {
			return false
		}
	}
	id, ok := rawjson.String(v.ID)
	if v.Method != nil || !ok || !strings.HasPrefix(id, lanePrefix) {
		return false
	}
	p.answer(id, &v, nil)
	return true
}

// anyID finds a response's id at either end of an over-long line:
// JSON-RPC encoders write it first or last. An upstream that fools it can
// only fail a call of its own.
var anyID = regexp.MustCompile(`"id"\s*:\s*("` + lanePrefix + `[0-9]+"|-?[0-9]{1,15})\s*[,}]`)

// readLine reads the next line, a copy. One past max is read to its end
// and dropped: its call, when its id can be found, is answered with the
// cap at once (a lane call directly, the SDK's by an error response in
// the line's place) instead of waiting for the timeout.
func (p *pipe) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := p.r.ReadSlice('\n')
		if len(line)+len(chunk) > p.max {
			return p.discard(append(line, chunk...), err)
		}
		line = append(line, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

// discard reads the rest of an over-long line that begins with start.
func (p *pipe) discard(start []byte, err error) ([]byte, error) {
	const keep = 512
	head := start[:min(len(start), keep)]
	tail := start[max(0, len(start)-keep):]
	for errors.Is(err, bufio.ErrBufferFull) {
		var chunk []byte
		chunk, err = p.r.ReadSlice('\n')
		tail = append(tail, chunk...)
		tail = tail[max(0, len(tail)-keep):]
	}
	why := fmt.Sprintf("answered with a message over %d bytes, over the cap", p.max)
	for _, end := range [][]byte{head, tail} {
		m := anyID.FindSubmatch(end)
		if m == nil {
			continue
		}
		if id := string(m[1]); id[0] == '"' {
			p.answer(strings.Trim(id, `"`), nil, errors.New(why))
			return nil, err
		}
		msg, _ := json.Marshal(why)
		return []byte(`{"jsonrpc":"2.0","id":` + string(m[1]) + `,"error":{"code":-32603,"message":` + string(msg) + "}}\n"), err
	}
	return nil, err
}

// start makes one tools/call on the lane: done is called once, with its
// result as the upstream wrote it (decodeResult reads it as the SDK's
// client would), or with why there is none
// (the timeout, the caller's cancel, the connection's end). It may be
// called before start returns. cancel abandons the call, telling the
// upstream, as the SDK's client does.
func (p *pipe) start(params []byte, timeout time.Duration, done func(result json.RawMessage, err error)) (cancel func()) {
	p.mu.Lock()
	if p.gone != nil {
		err := p.gone
		p.mu.Unlock()
		done(nil, err)
		return func() {}
	}
	p.next++
	id := lanePrefix + strconv.FormatUint(p.next, 10)
	w := &waiter{done: done, deadline: time.Now().Add(timeout)}
	w.abandon = func(err error) {
		if p.take(id) != nil {
			// Tell the upstream, as the SDK's client does.
			go p.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"` + id + `","reason":"ingestd gateway: ` + err.Error() + `"}}` + "\n"))
			w.done(nil, err)
		}
	}
	p.waiting[id] = w
	// Armed once, it is left to fire: a call that ends does not stop it,
	// and when it fires it re-arms for the earliest call still waiting.
	if p.fires.IsZero() || w.deadline.Before(p.fires) {
		p.fires = w.deadline
		if p.expiry == nil {
			p.expiry = time.AfterFunc(timeout, p.expire)
		} else {
			p.expiry.Reset(timeout)
		}
	}
	p.mu.Unlock()
	msg := make([]byte, 0, len(params)+80)
	msg = append(msg, `{"jsonrpc":"2.0","id":"`+id+`","method":"tools/call","params":`...)
	msg = append(msg, params...)
	msg = append(msg, "}\n"...)
	if _, err := p.Write(msg); err != nil {
		p.answer(id, nil, err)
	}
	return func() { w.abandon(context.Canceled) }
}

// result is a lane call's result as written, or the error its response
// is.
func (r *response) result() (json.RawMessage, error) {
	if len(r.Error) > 0 && string(r.Error) != "null" {
		var e struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(r.Error, &e); err != nil {
			return nil, fmt.Errorf("an error response that is no JSON-RPC error: %v", err)
		}
		return nil, fmt.Errorf("%s (JSON-RPC error %d)", e.Message, e.Code)
	}
	if len(r.Result) == 0 {
		return nil, errors.New("a response with neither result nor error")
	}
	return r.Result, nil
}

// decodeResult reads a tools/call result as the SDK's client decodes
// one.
func decodeResult(raw json.RawMessage) (*mcp.CallToolResult, error) {
	res := new(mcp.CallToolResult)
	if plainResult(raw, res) {
		return res, nil
	}
	res = new(mcp.CallToolResult)
	if err := json.Unmarshal(raw, res); err != nil {
		return nil, fmt.Errorf("a result that is no CallToolResult: %v", err)
	}
	return res, nil
}

// plainResult decodes the common result, text content and nothing the
// SDK's decoder would read differently, as that decoder does, into res,
// without its reflection and per-message buffers; false for anything
// else, which the SDK's decoder then reads. With res nil it only says
// whether it would: such a result, a content array of text and nothing
// an MCP host acts on beyond it, can be passed on as it is. Member names
// are matched exactly, as the SDK matches them (encoding/json alone
// would match them in any case).
func plainResult(raw json.RawMessage, res *mcp.CallToolResult) bool {
	content := false
	return rawjson.Members(raw, func(k, v []byte) bool {
		switch string(k) {
		case "_meta":
			if res == nil {
				return v[0] == '{' || string(v) == "null" // what decodes as a map
			}
			return json.Unmarshal(v, &res.Meta) == nil
		case "structuredContent":
			// Kept as written: it is passed on, or fenced as JSON text,
			// never read.
			if res != nil && string(v) != "null" {
				res.StructuredContent = json.RawMessage(v)
			}
		case "isError":
			b, ok := rawjson.Bool(v)
			if res != nil {
				res.IsError = b
			}
			return ok
		case "content":
			content = true
			if res != nil {
				res.Content = make([]mcp.Content, 0, 1)
			}
			return rawjson.Elements(v, func(item []byte) bool {
				text, n := "", 0
				if !rawjson.Members(item, func(k, v []byte) bool {
					n++
					switch string(k) {
					case "type":
						return rawjson.IsString(v, "text")
					case "text":
						if res == nil {
							return v[0] == '"'
						}
						var ok bool
						text, ok = rawjson.String(v)
						return ok
					}
					return false
				}) || n != 2 {
					return false
				}
				if res != nil {
					res.Content = append(res.Content, &mcp.TextContent{Text: text})
				}
				return true
			})
		default:
			return false
		}
		return true
	}) && content
}
