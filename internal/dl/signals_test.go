//go:build linux && (amd64 || arm64)

package dl

import (
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"
)

// A handler installed without SA_ONSTACK (as a vendor library's) gets the
// flag; Go's own handlers keep theirs; and a signal then still reaches Go.
func TestFixSignals(t *testing.T) {
	sig := syscall.SIGUSR2
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sig) // Go's handler, with SA_ONSTACK
	defer signal.Stop(ch)
	var goAct sigaction
	if e := rtSigaction(int(sig), nil, &goAct); e != 0 {
		t.Fatal(e)
	}
	if goAct.flags&saOnStack == 0 {
		t.Fatal("Go's handler lacks SA_ONSTACK")
	}
	// A foreign library's handler: Go's address, the flag dropped.
	foreign := goAct
	foreign.flags &^= saOnStack
	if e := rtSigaction(int(sig), &foreign, nil); e != 0 {
		t.Fatal(e)
	}
	if n := FixSignals(); n < 1 {
		t.Fatalf("FixSignals changed %d handlers", n)
	}
	var now sigaction
	rtSigaction(int(sig), nil, &now)
	if now.flags&saOnStack == 0 || now.handler != goAct.handler {
		t.Fatalf("handler %#x flags %#x after FixSignals", now.handler, now.flags)
	}
	if n := FixSignals(); n != 0 {
		t.Errorf("a second FixSignals changed %d handlers", n)
	}
	syscall.Kill(os.Getpid(), sig)
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("the signal did not reach Go")
	}
}
