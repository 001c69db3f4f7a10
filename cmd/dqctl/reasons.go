package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/dq-go/delayqueue/redisq"
)

// Dead letters by cause: reasons groups the dead items by their reason
// (redisq DeadReasons), list -reason lists one group, and requeue and
// delete-dead -reason act on one.

func withReason(fs *flag.FlagSet, e *env, usage string) {
	fs.Var(&e.reason, "reason", usage)
}

func reasonsFlags(fs *flag.FlagSet, e *env) {
	withJSON(fs, e)
	withFull(fs, e)
	fs.Int64Var(&e.reasonLimit, "limit", redisq.MaxDeadReasonScan, fmt.Sprintf("group the oldest `n` dead items (1..%d; a partitioned queue: of each partition); "+
		"one script per 1000, none copying a payload", redisq.MaxDeadReasonScan))
}

// checkReason returns the usage error of an empty -reason, or nil.
func checkReason(reason string) error {
	if reason == "" {
		return usageErr("-reason is empty: give the reason as dqctl reasons prints it (dead items with no reason cannot be picked by reason)")
	}
	return nil
}

// diedOf is `3 dead items died of "smtp 550"`, `no dead item died of ...`.
func diedOf(n int, reason string) string {
	what := counted(int64(n), "dead item")
	if n == 0 {
		what = "no dead item"
	}
	return what + " died of " + quote(reason)
}

// deadReasons groups the dead items of t, the oldest limit of them (of
// each partition): a partitioned queue with no data has none.
func deadReasons(e *env, t *target, limit int64) (redisq.DeadReasonSummary, error) {
	s, err := t.DeadReasons(e.ctx, limit)
	if err != nil && e.partitionedEmpty(err) {
		return redisq.DeadReasonSummary{}, nil
	}
	if s.Reasons == nil {
		s.Reasons = []redisq.DeadReason{}
	}
	return s, err
}

// examined says which dead items a summary that is not complete grouped:
// "the oldest 1,000 of 2,500 dead items".
func examined(t *target, s redisq.DeadReasonSummary, limit int64) string {
	if t.p != nil {
		return fmt.Sprintf("%s of %s dead items (the oldest %s of each partition)", num(s.Examined), num(s.Dead), num(limit))
	}
	return fmt.Sprintf("the oldest %s of %s dead items", num(s.Examined), num(s.Dead))
}

// hintName is a queue name for a command line in a hint: as it is when
// plain, else QUEUE.
func hintName(name string) string {
	if cell(name) != name || strings.ContainsAny(name, `'$\!*?;&|<>()[]#~`+"`") {
		return "QUEUE"
	}
	return name
}

func cmdReasons(e *env) error {
	if e.reasonLimit < 1 || e.reasonLimit > redisq.MaxDeadReasonScan {
		return usageErr("-limit must be in 1..%d", redisq.MaxDeadReasonScan)
	}
	t, err := e.target(e.args[0])
	if err != nil {
		return err
	}
	defer t.Close()
	s, err := deadReasons(e, t, e.reasonLimit)
	if err != nil {
		return err
	}
	if e.json {
		return writeJSON(e.stdout, struct {
			Queue string `json:"queue"`
			redisq.DeadReasonSummary
			Complete bool `json:"complete"`
		}{t.Name(), s, s.Complete()})
	}
	if len(s.Reasons) == 0 {
		e.printf("no dead items in %s\n", t.label())
		return nil
	}
	rows := [][]string{{"COUNT", "FIRST", "LAST", "REASON"}}
	for _, r := range s.Reasons {
		rows = append(rows, []string{num(r.Count), when(r.First, s.Now), when(r.Last, s.Now), cell(r.Reason)})
	}
	cut := !e.full && fitColumns(rows, screen(e.stdout).cols, 3) != nil
	if err := writeTable(e.stdout, rows); err != nil {
		return err
	}
	var head, note string
	if s.Complete() {
		head = fmt.Sprintf("%s of %s in %s", counted(s.Dead, "dead item"), t.label(), counted(int64(len(s.Reasons)), "group"))
	} else {
		head = fmt.Sprintf("grouped %s of %s, in %s (-limit %d: up to %d)", examined(t, s, e.reasonLimit), t.label(), counted(int64(len(s.Reasons)), "group"),
			e.reasonLimit, redisq.MaxDeadReasonScan)
	}
	if cut {
		note = "reasons cut to the terminal's width (-full: whole)"
	}
	summary(e, head, note)
	cols := screen(e.stdout).cols
	fmt.Fprint(e.stdout, wrapTo(cols, "", "  ", []string{fmt.Sprintf("one group: dqctl list %s dead -reason R lists it", hintName(t.Name())),
		fmt.Sprintf("dqctl requeue (or delete-dead) %s -reason R acts on it", hintName(t.Name()))}, ","))
	return nil
}

// deadByReason requeues (or deletes) the dead items that died of -reason,
// after asking how many (unless -yes); none is not found.
func deadByReason(e *env, t *target, requeue bool) error {
	reason := e.reason.val
	if err := checkReason(reason); err != nil {
		return err
	}
	verb, done := "delete", "deleted"
	if requeue {
		verb, done = "requeue", "requeued"
	}
	s, err := deadReasons(e, t, redisq.MaxDeadReasonScan)
	if err != nil {
		return err
	}
	var group int64
	for _, r := range s.Reasons {
		if r.Reason == reason {
			group = r.Count
		}
	}
	if group == 0 && s.Complete() {
		return notFound("no dead item of %s died of %s; nothing changed (dqctl reasons lists the reasons)", t.label(), quote(reason))
	}
	what := counted(group, "dead item")
	if group > 1 {
		what = "the " + what
	}
	if !s.Complete() {
		what = fmt.Sprintf("the dead items (%s of them in %s)", num(group), examined(t, s, redisq.MaxDeadReasonScan))
	}
	if err := e.confirm(fmt.Sprintf("%s %s of %s that died of %s? [y/N] ", verb, what, t.label(), quote(reason)), "y"); err != nil {
		return err
	}
	var n int64
	if requeue {
		n, err = t.RequeueDeadByReason(e.ctx, reason)
	} else {
		n, err = t.DeleteDeadByReason(e.ctx, reason)
	}
	e.printf("%s %s of %s that died of %s\n", done, counted(n, "dead item"), t.label(), quote(reason))
	return partial(e, err, "dead items of that reason")
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
