package main

import (
	"strings"
	"testing"
	"time"

	"github.com/dq-go/delayqueue/bench/internal/report"
)

// setServer splits the server's CPU per item by INFO commandstats: the
// time in script calls (their commands included), the time in every other
// command, and the rest of INFO cpu; INFO's own calls are left out.
func TestSetServerSplitsScriptTime(t *testing.T) {
	snap := func(stats string, cpu time.Duration) serverSnap {
		calls, usec := parseCommandStats(strings.ReplaceAll(stats, "\n", "\r\n"))
		return serverSnap{calls: calls, usec: usec, cpu: cpu, mem: -1}
	}
	s0 := snap(`# Commandstats
cmdstat_evalsha:calls=10,usec=1000,usec_per_call=100.00,rejected_calls=0,failed_calls=0
cmdstat_hset:calls=10,usec=50,usec_per_call=5.00,rejected_calls=0,failed_calls=0
cmdstat_info:calls=3,usec=90,usec_per_call=30.00,rejected_calls=0,failed_calls=0
`, time.Second)
	s1 := snap(`# Commandstats
cmdstat_evalsha:calls=110,usec=9000,usec_per_call=81.82,rejected_calls=0,failed_calls=0
cmdstat_eval:calls=10,usec=2000,usec_per_call=200.00,rejected_calls=0,failed_calls=0
cmdstat_hset:calls=210,usec=1050,usec_per_call=5.00,rejected_calls=0,failed_calls=0
cmdstat_bzpopmin:calls=5,usec=1000,usec_per_call=200.00,rejected_calls=0,failed_calls=0
cmdstat_info:calls=9,usec=900000,usec_per_call=100000.00,rejected_calls=0,failed_calls=0
`, time.Second+20*time.Millisecond)

	n, sus, ous, ok := s1.timeSplit(s0)
	if !ok || n != 110 || sus != 10000 || ous != 2000 {
		t.Fatalf("timeSplit = %d calls, %dµs in scripts, %dµs in others, %v; want 110, 10000, 2000, true", n, sus, ous, ok)
	}
	var r report.Result
	setServer(&r, 100, s0, s1)
	// 20 ms of CPU over 100 items: 200µs each, of which 100µs in 1.10
	// script calls (90.9µs each), 20µs in the other commands, and 100µs
	// outside them.
	want := "of its CPU per item (INFO commandstats usec): 100µs in 1.10 script calls (90.9µs per call), the commands inside them and those sent alone 20.0µs, outside any command (sockets, event loop) 100µs"
	if !strings.Contains(r.Note, want) {
		t.Fatalf("note:\n%s\nwant it to hold:\n%s", r.Note, want)
	}

	if _, _, _, ok := s1.timeSplit(serverSnap{}); ok {
		t.Fatal("timeSplit without a reading reports ok")
	}
}
