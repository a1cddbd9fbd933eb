package splitstoragetest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Fault is what the proxy does to one request.
type Fault int

const (
	// None forwards the request untouched.
	None Fault = iota
	// SlowDown answers 503 with an S3 SlowDown error (the body says SlowDown for GCS too).
	SlowDown
	// InternalError answers 500.
	InternalError
	// CutRequest reads half the request body (at most 64 KiB) and drops the connection.
	CutRequest
	// CutResponse forwards the request and drops the connection half-way through
	// the response body (with no body: drops the whole answer after the store served it).
	CutResponse
	// Stall holds the request without answering until the client gives up (or StallFor passes).
	Stall
	// Refuse drops the connection at once (the store is gone).
	Refuse
	// Forbidden answers 403 with an S3 AccessDenied error, as a store does for
	// a principal its policy does not allow to read the object.
	Forbidden
)

func (f Fault) String() string {
	return [...]string{"none", "503-slowdown", "500", "cut-request", "cut-response", "stall", "refuse", "403-forbidden"}[f]
}

// FaultProxy is an in-process HTTP reverse proxy in front of an S3 or GCS
// server that injects faults into a chosen share of requests or chosen ones.
type FaultProxy struct {
	Addr string // host:port to point the client at
	// StallFor bounds a Stall (default 1 minute).
	StallFor time.Duration
	// PreserveHost forwards the client's Host header (needed for S3: the
	// signature covers it). Otherwise the upstream sees its own address as Host
	// (needed for fake-gcs-server, which checks it against -public-host).
	PreserveHost bool
	// Latency is added to every request before it is passed on: a real
	// object store's round trip, for what a view of many objects costs.
	Latency time.Duration

	target *url.URL
	rp     *httputil.ReverseProxy
	srv    *http.Server

	mu       sync.Mutex
	rate     float64
	kinds    []Fault
	rules    []*rule
	down     bool
	downAt   int64     // goes down once this many requests have been served (0: never)
	wentDown time.Time // when DownAfter took the store away
	rng      *rand.Rand
	counts   map[Fault]int

	requests atomic.Int64
	byKind   map[string]int64 // by requestKind, under mu
	served   atomic.Int64     // response body bytes passed on to clients
	seen     []string         // "METHOD path" of every request
	record   bool
	recorded []Request
	answers  []answer
}

// Request is one request the proxy saw (RecordRequests): what a test
// asserts was sent where a store does not enforce what it asks (GCS and
// Azure locks on their emulators).
type Request struct {
	Method, URI string
	Header      http.Header
	Body        []byte // up to 64 KiB; nil above
}

// answer is a canned answer for requests the store does not implement.
type answer struct {
	method, substr string
	status         int
	header         http.Header
	body           string
}

// RecordRequests makes the proxy keep every request from now on (Recorded).
func (p *FaultProxy) RecordRequests() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.record = true
}

// Recorded returns the requests kept since RecordRequests, in order.
func (p *FaultProxy) Recorded() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Request(nil), p.recorded...)
}

// Answer makes the proxy answer requests with method whose URI contains
// substr itself, with status, header and body, without passing them on:
// for the requests an emulator does not implement, whose sending is what a
// test proves.
func (p *FaultProxy) Answer(method, substr string, status int, header http.Header, body string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.answers = append(p.answers, answer{method, substr, status, header, body})
}

// keep records r (RecordRequests) and returns the canned answer for it, if any.
func (p *FaultProxy) keep(r *http.Request) *answer {
	p.mu.Lock()
	record := p.record
	var a *answer
	for i := range p.answers {
		if p.answers[i].method == r.Method && strings.Contains(r.URL.RequestURI(), p.answers[i].substr) {
			a = &p.answers[i]
			break
		}
	}
	p.mu.Unlock()
	if !record {
		return a
	}
	req := Request{Method: r.Method, URI: r.URL.RequestURI(), Header: r.Header.Clone()}
	if r.ContentLength <= 64<<10 {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10+1))
		if len(b) <= 64<<10 {
			req.Body = b
		}
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(b), r.Body), r.Body}
	}
	p.mu.Lock()
	p.recorded = append(p.recorded, req)
	p.mu.Unlock()
	return a
}

// BytesServed is the response body bytes the server sent through the proxy
// (what a download cost, counted on the wire).
func (p *FaultProxy) BytesServed() int64 { return p.served.Load() }

// countingWriter counts the response body bytes written.
type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c countingWriter) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.n.Add(int64(n))
	return n, err
}

func (c countingWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

type rule struct {
	method, substr string
	fault          Fault
	times          int
}

// NewFaultProxy starts a proxy to target ("127.0.0.1:port"), closed at cleanup.
func NewFaultProxy(t testing.TB, target string) *FaultProxy {
	t.Helper()
	u := &url.URL{Scheme: "http", Host: target}
	p := &FaultProxy{target: u, StallFor: time.Minute, counts: map[Fault]int{}, rng: rand.New(rand.NewPCG(1, 2))}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			if p.PreserveHost {
				pr.Out.Host = pr.In.Host
			} else {
				pr.Out.Host = target
			}
		},
		Transport:     &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true},
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0),
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.Addr = l.Addr().String()
	p.srv = &http.Server{Handler: p}
	go p.srv.Serve(l)
	t.Cleanup(func() { p.srv.Close() })
	return p
}

// SetFailRate makes a share (0..1) of all requests fail with one of kinds, chosen at random.
func (p *FaultProxy) SetFailRate(rate float64, kinds ...Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rate, p.kinds = rate, kinds
}

// FailMatching makes the next times requests whose method matches (empty: any)
// and whose URL contains substr fail with fault; e.g. ("PUT", ".part-00000002", CutRequest, 1).
// The URL is the escaped request URI, so GCS object names appear with %2F for '/'.
func (p *FaultProxy) FailMatching(method, substr string, fault Fault, times int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = append(p.rules, &rule{method: method, substr: substr, fault: fault, times: times})
}

// ClearMatching drops every FailMatching rule.
func (p *FaultProxy) ClearMatching() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = nil
}

// SetDown makes the store unreachable (every request refused) or reachable again.
func (p *FaultProxy) SetDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
}

// DownAfter makes the store go away for good once n requests have been
// served, decided in the proxy itself, so a test can stop the store in the
// middle of a run however fast the run is.
func (p *FaultProxy) DownAfter(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.downAt = n
}

// WentDown returns when DownAfter took the store away (zero if it has not).
func (p *FaultProxy) WentDown() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.wentDown
}

// Injected returns how many faults of each kind were injected.
func (p *FaultProxy) Injected() map[Fault]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[Fault]int{}
	for k, v := range p.counts {
		out[k] = v
	}
	return out
}

// Requests returns how many requests reached the proxy.
func (p *FaultProxy) Requests() int64 { return p.requests.Load() }

func (p *FaultProxy) pick(r *http.Request, seq int64) Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.downAt > 0 && seq > p.downAt && !p.down {
		p.down, p.wentDown = true, time.Now()
	}
	f := None
	if p.down {
		f = Refuse
	} else {
		for _, ru := range p.rules {
			if ru.times > 0 && (ru.method == "" || ru.method == r.Method) && strings.Contains(r.URL.RequestURI(), ru.substr) {
				ru.times--
				f = ru.fault
				break
			}
		}
		if f == None && p.rate > 0 && len(p.kinds) > 0 && p.rng.Float64() < p.rate {
			f = p.kinds[p.rng.IntN(len(p.kinds))]
		}
	}
	if f != None {
		p.counts[f]++
	}
	return f
}

// Kinds counts the requests that reached the proxy by kind: LIST (a
// listing of S3, GCS or Azure), or the method.
func (p *FaultProxy) Kinds() map[string]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.byKind)
}

// requestKind is LIST for a listing (S3's list-type, GCS's object list,
// Azure's comp=list), else the method.
func requestKind(r *http.Request) string {
	q := r.URL.Query()
	if r.Method == http.MethodGet && (q.Has("list-type") || q.Get("comp") == "list" || strings.HasSuffix(r.URL.Path, "/o")) {
		return "LIST"
	}
	return r.Method
}

// Seen returns "METHOD path" of every request that reached the proxy, in
// order (what a test counts at the server).
func (p *FaultProxy) Seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

func (p *FaultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	seq := p.requests.Add(1)
	p.mu.Lock()
	p.seen = append(p.seen, r.Method+" "+r.URL.Path)
	if p.byKind == nil {
		p.byKind = map[string]int64{}
	}
	p.byKind[requestKind(r)]++
	p.mu.Unlock()
	if p.Latency > 0 {
		time.Sleep(p.Latency)
	}
	if a := p.keep(r); a != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		for k, v := range a.header {
			w.Header()[k] = v
		}
		w.WriteHeader(a.status)
		_, _ = io.WriteString(w, a.body)
		return
	}
	switch f := p.pick(r, seq); f {
	case None:
		p.rp.ServeHTTP(countingWriter{w, &p.served}, r)
	case SlowDown, InternalError, Forbidden:
		_, _ = io.Copy(io.Discard, r.Body)
		code, status := "SlowDown", http.StatusServiceUnavailable
		switch f {
		case InternalError:
			code, status = "InternalError", http.StatusInternalServerError
		case Forbidden:
			code, status = "AccessDenied", http.StatusForbidden
		}
		w.Header().Set("Content-Type", "application/xml")
		w.Header().Set("Connection", "close")
		w.WriteHeader(status)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>injected by FaultProxy</Message></Error>`, code)
	case CutRequest:
		_, _ = io.CopyN(io.Discard, r.Body, min(r.ContentLength/2, 64<<10))
		panic(http.ErrAbortHandler)
	case CutResponse:
		cw := &cuttingWriter{ResponseWriter: w}
		p.rp.ServeHTTP(cw, r)
		if cw.lost {
			panic(http.ErrAbortHandler)
		}
	case Stall:
		select {
		case <-r.Context().Done():
		case <-time.After(p.StallFor):
		}
		panic(http.ErrAbortHandler)
	case Refuse:
		panic(http.ErrAbortHandler)
	}
}

// cuttingWriter lets the headers and half the declared body through, then fails
// the copy, which makes the reverse proxy abort the connection.
type cuttingWriter struct {
	http.ResponseWriter
	limit   int64
	written int64
	armed   bool
	lost    bool // no body to cut: the whole answer is dropped
}

var errCut = errors.New("response cut by FaultProxy")

func (c *cuttingWriter) WriteHeader(code int) {
	if cl := c.Header().Get("Content-Length"); cl != "" && code/100 == 2 {
		var n int64
		fmt.Sscan(cl, &n)
		if n > 1 {
			c.limit, c.armed = n/2, true
		}
	}
	if !c.armed {
		// Nothing to cut half-way: the request was served, the answer is lost.
		c.lost = true
		return
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *cuttingWriter) Write(b []byte) (int, error) {
	if c.lost {
		return 0, errCut
	}
	room := c.limit - c.written
	if room <= 0 {
		return 0, errCut
	}
	if int64(len(b)) > room {
		n, _ := c.ResponseWriter.Write(b[:room])
		c.written += int64(n)
		if f, ok := c.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
		return n, errCut
	}
	n, err := c.ResponseWriter.Write(b)
	c.written += int64(n)
	return n, err
}

// Flush passes through only once the headers went out. The reverse proxy
// flushes from a timer of its own (FlushInterval -1) right after WriteHeader;
// passing that flush through for a lost answer would send an implicit
// "200 OK" before the connection is dropped, and the client would count a
// request the test means to fail as a success, depending on which goroutine
// runs first.
func (c *cuttingWriter) Flush() {
	if !c.armed {
		return
	}
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
