package proxy

import "sync"

// Stop makes every request still waiting for its admission fail at once
// with 503, and every later one; requests admitted go on.
func (p *Proxy) Stop() {
	p.stop()
	for _, rq := range p.stopList.close() {
		rq.stopWaiting()
	}
}

// stopWaiting ends rq's wait with errStopping, if it still waits.
func (rq *request) stopWaiting() {
	if rq.state.CompareAndSwap(stateWaiting, stateStopped) {
		rq.cancel(errStopping)
	}
}

// stopList holds the requests being served, for Stop to end those that
// still wait. A request used to register with context.AfterFunc on the
// proxy's stop context instead: 3 allocations and an entry in that
// context's map, under its one lock, for each request. The list links
// the requests themselves, so adding and removing one allocates nothing.
// Safe for concurrent use; the zero value is an empty, open list.
type stopList struct {
	mu     sync.Mutex
	head   *request
	closed bool
}

// add links rq into the list and reports true, or reports false if
// Stop has closed the list already (rq must then be stopped by its
// caller). A request added is removed with remove once it has been
// served.
func (l *stopList) add(rq *request) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	rq.prev, rq.next = nil, l.head
	if l.head != nil {
		l.head.prev = rq
	}
	l.head = rq
	return true
}

// remove unlinks rq, which add linked.
func (l *stopList) remove(rq *request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if rq.prev != nil {
		rq.prev.next = rq.next
	} else if l.head == rq {
		l.head = rq.next
	}
	if rq.next != nil {
		rq.next.prev = rq.prev
	}
	rq.prev, rq.next = nil, nil
}

// close closes the list to later adds and returns the requests in it.
func (l *stopList) close() []*request {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	var rqs []*request
	for rq := l.head; rq != nil; rq = rq.next {
		rqs = append(rqs, rq)
	}
	return rqs
}
