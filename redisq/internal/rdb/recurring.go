package rdb

import (
	"context"
	"fmt"
	"strconv"
)

var (
	scriptRegister   = newScript("register", kSched, kWake, kStats, kSeq).acked()
	scriptUnregister = newScript("unregister", kSched, kStats).withRID().acked()
	scriptRecList    = newScript("rec_list")
	scriptRecGet     = newScript("rec_get")
	scriptAdvance    = newScript("advance", kSched, kSeq, kWake).acked()
	scriptSeen       = newScript("seen")
	scriptRecPause   = newScript("rec_pause", kSched, kStats).acked()
	scriptRecResume  = newScript("rec_resume", kSched, kWake, kStats, kSeq).acked()
)

// RegisterArgs is one Register (lua/register.lua): the definition, and
// the first occurrence (ms) with its item id for a new registration
// (First, FirstID) and for one that exists and changes (Update, UpdateID).
type RegisterArgs struct {
	Name, Spec string
	Payload    []byte
	CatchUp    int
	Version    int64
	First      int64
	FirstID    string
	Update     int64
	UpdateID   string
	// FirstDue and UpdateDue: when the item of First and of Update is
	// due (the occurrence, or later for a jittered schedule).
	FirstDue, UpdateDue int64
	Job                 Job // every occurrence's
}

// RegisterReply: Code 1 created, 2 updated, 3 unchanged, 4 stale, 5 retry
// after RetryAfter (ms: the first occurrence given is not after the last
// one that has come).
type RegisterReply struct {
	Code       int
	RetryAfter int64
}

// Register creates, changes or confirms a registration.
func (r *Runner) Register(ctx context.Context, a RegisterArgs) (RegisterReply, error) {
	extra := []string{r.Keys.Rec(a.Name), r.Keys.Recs, r.Keys.Recx, r.Keys.Item(a.FirstID), r.Keys.Item(a.UpdateID)}
	res, err := r.runOnce(ctx, scriptRegister, extra, a.Job.args([]interface{}{a.Name, a.Spec, a.Payload, strconv.Itoa(a.CatchUp),
		strconv.FormatInt(a.Version, 10), a.First, a.FirstID, a.Update, a.UpdateID, a.FirstDue, a.UpdateDue})...)
	if err != nil {
		return RegisterReply{}, err
	}
	code := int(toInt(res[0]))
	switch code {
	case 1, 2, 3, 4:
		return RegisterReply{Code: code}, nil
	case 5:
		return RegisterReply{Code: 5, RetryAfter: max(toInt(res[1]), toInt(res[3]))}, nil
	}
	return RegisterReply{}, errUnexpected("register", res)
}

// Unregister removes a registration (lua/unregister.lua): found false when
// there is none; cancelled when the item of its last occurrence was
// scheduled and is cancelled.
func (r *Runner) Unregister(ctx context.Context, name string) (found, cancelled bool, err error) {
	res, err := r.runOnce(ctx, scriptUnregister, []string{r.Keys.Rec(name), r.Keys.Recs, r.Keys.Recx}, name)
	if err != nil {
		return false, false, err
	}
	if toInt(res[0]) == 0 {
		return false, false, nil
	}
	return true, toInt(res[1]) == 1, nil
}

// Reg is one registration as the scripts read it (see reg_out in
// lua/include/reg_out.lua); times in ms.
type Reg struct {
	Name, Spec, ID   string
	CatchUp          int
	Version          int64
	Created, Updated int64
	Gen              int64
	At, Prev         int64 // the watermark, and the occurrence before it
	HasPrev, Ended   bool
	Extra, Seen      int64 // the last extra run and the last sighting (0: none)
	Paused           int64 // when PauseRec paused it (0: not paused)
	ItemState        State // the state of the item of ID ("" when it is gone)
	ItemDue          int64
	Size             int64
	Payload          string
	Job              Job // every occurrence's, with its Occurrence policy
	// Skipped counts the occurrences its policy skipped; LastSkipped is
	// the last one's id, LastSkipWhy why ("overlap", "late").
	Skipped                  int64
	LastSkipped, LastSkipWhy string
}

// regFields is the number of reply elements per registration of reg_out.
const regFields = 18 + len(JobFields) + 4

func regsOf(res []interface{}) []Reg {
	var regs []Reg
	for i := 0; i+regFields <= len(res); i += regFields {
		s := func(j int) string { v, _ := res[i+j].(string); return v }
		n := func(j int) int64 { return toInt(res[i+j]) }
		regs = append(regs, Reg{
			Name: s(0), Spec: s(1), CatchUp: int(n(2)), Version: n(3), Created: n(4), Updated: n(5),
			Gen: n(6), At: n(7), Prev: n(8), HasPrev: s(8) != "", Ended: s(9) == "1", ID: s(10),
			Extra: n(11), Seen: n(12), Paused: n(13), ItemState: State(s(14)), ItemDue: ToMS(res[i+15]),
			Size: n(16), Payload: s(17), Job: jobOf(res[i+18 : i+18+len(JobFields)]),
		})
		r := &regs[len(regs)-1]
		o := 18 + len(JobFields)
		r.Job.Occurrence, r.Skipped, r.LastSkipped, r.LastSkipWhy = s(o), n(o+1), s(o+2), s(o+3)
	}
	return regs
}

// RegPage is one page of RecList.
type RegPage struct {
	Now  int64
	Feed string // the change feed's last entry id ("0-0" if none)
	Read int    // names read
	Last string // the last of them
	Regs []Reg
}

// RecList reads up to n registrations after the name after ("" for the
// first), without payloads (lua/rec_list.lua).
func (r *Runner) RecList(ctx context.Context, after string, n int) (RegPage, error) {
	res, err := r.run(ctx, scriptRecList, []string{r.Keys.Recs, r.Keys.Recx}, after, n)
	if err != nil {
		return RegPage{}, err
	}
	return RegPage{Now: toInt(res[0]), Feed: fmt.Sprint(res[1]), Read: int(toInt(res[2])), Last: fmt.Sprint(res[3]), Regs: regsOf(res[4:])}, nil
}

// RecGet reads one registration with its payload (lua/rec_get.lua).
func (r *Runner) RecGet(ctx context.Context, name string) (now int64, reg Reg, ok bool, err error) {
	res, err := r.run(ctx, scriptRecGet, []string{r.Keys.Rec(name)}, name)
	if err != nil {
		return 0, Reg{}, false, err
	}
	regs := regsOf(res[1:])
	if len(regs) == 0 {
		return toInt(res[0]), Reg{}, false, nil
	}
	return toInt(res[0]), regs[0], true, nil
}

// Occurrence is one occurrence to enqueue: its time (ms) and item id.
type Occurrence struct {
	At  int64 // the occurrence (ms): the watermark's
	Due int64 // its item's due time (ms): At, or later for a jittered schedule
	ID  string
}

// AdvanceArgs is a keeper's plan for one registration (lua/advance.lua):
// the generation and watermark it was computed from, the first occurrence
// it skips (HasSkip), whether the series ends after it, and the
// occurrences to enqueue, increasing, each after the watermark.
type AdvanceArgs struct {
	Name    string
	Gen, At int64
	Skip    int64
	HasSkip bool
	End     bool
	Occ     []Occurrence
}

// AdvanceReply: Code 1 done, 0 the registration is not at that generation
// and watermark or has ended (Gen 0: it is gone; Gen, At and Ended as
// stored), 2 the watermark has not come yet, 3 the skipped occurrence has
// not come yet by the Redis clock.
type AdvanceReply struct {
	Code    int
	Now     int64
	Gen, At int64
	Ended   bool
}

// Advance enqueues a registration's next occurrences, once whatever the
// number of keepers racing (a compare-and-set on the watermark).
func (r *Runner) Advance(ctx context.Context, a AdvanceArgs) (AdvanceReply, error) {
	keys := make([]string, 0, 1+len(a.Occ))
	keys = append(keys, r.Keys.Rec(a.Name))
	args := make([]interface{}, 0, 5+3*len(a.Occ))
	skip, end := "", "0"
	if a.HasSkip {
		skip = strconv.FormatInt(a.Skip, 10)
	}
	if a.End {
		end = "1"
	}
	args = append(args, a.Name, a.Gen, a.At, skip, end)
	for _, o := range a.Occ {
		keys = append(keys, r.Keys.Item(o.ID))
		args = append(args, o.At, o.Due, o.ID)
	}
	res, err := r.run(ctx, scriptAdvance, keys, args...)
	if err != nil {
		return AdvanceReply{}, err
	}
	rep := AdvanceReply{Code: int(toInt(res[0])), Now: toInt(res[1])}
	switch rep.Code {
	case 1, 2, 3:
	case 0:
		rep.Gen, rep.At, rep.Ended = toInt(res[2]), toInt(res[3]), toInt(res[4]) == 1
	default:
		return AdvanceReply{}, fmt.Errorf("redisq: advance: unexpected reply %v", res)
	}
	return rep, nil
}

// Seen records Redis TIME as the sighting of the registrations names that
// exist (lua/seen.lua).
func (r *Runner) Seen(ctx context.Context, names []string) error {
	keys := make([]string, len(names))
	args := make([]interface{}, len(names))
	for i, n := range names {
		keys[i], args[i] = r.Keys.Rec(n), n
	}
	_, err := r.run(ctx, scriptSeen, keys, args...)
	return err
}

// PauseRec pauses registration name (lua/rec_pause.lua): found false when
// there is none, already when it was paused; cancelled when the item of
// its last occurrence was scheduled and not yet due, and is cancelled.
func (r *Runner) PauseRec(ctx context.Context, name string) (found, already, cancelled bool, err error) {
	res, err := r.runOnce(ctx, scriptRecPause, []string{r.Keys.Rec(name), r.Keys.Recx}, name)
	if err != nil {
		return false, false, false, err
	}
	switch toInt(res[0]) {
	case 0:
		return false, false, false, nil
	case 2:
		return true, true, false, nil
	}
	return true, false, toInt(res[1]) == 1, nil
}

// ResumeArgs is one ResumeRec: the first occurrence after now (ms), its
// due time and item id; HasFirst false when the schedule has none.
type ResumeArgs struct {
	Name     string
	First    int64
	FirstDue int64
	FirstID  string
	HasFirst bool
}

// ResumeRec resumes a paused registration (lua/rec_resume.lua): Code 0 not
// found, 1 resumed, 2 not paused, 5 retry after RetryAfter (ms: the first
// occurrence given is not after the last one that has come).
func (r *Runner) ResumeRec(ctx context.Context, a ResumeArgs) (RegisterReply, error) {
	first, id := "", ""
	if a.HasFirst {
		first, id = strconv.FormatInt(a.First, 10), a.FirstID
	}
	keys := []string{r.Keys.Rec(a.Name), r.Keys.Recx}
	if a.HasFirst {
		keys = append(keys, r.Keys.Item(id))
	}
	res, err := r.runOnce(ctx, scriptRecResume, keys, a.Name, first, id, a.FirstDue)
	if err != nil {
		return RegisterReply{}, err
	}
	code := int(toInt(res[0]))
	switch code {
	case 0, 1, 2:
		return RegisterReply{Code: code}, nil
	case 5:
		return RegisterReply{Code: 5, RetryAfter: toInt(res[1])}, nil
	}
	return RegisterReply{}, errUnexpected("resume", res)
}

var scriptBackfill = newScript("backfill", kSched, kSeq, kWake, kStats).acked()

// BackfillReply: Code 1 done (Enqueued new items, Existing left), 0 the
// registration is not at the generation given, or an occurrence is not
// before its watermark At (Gen 0: it is gone); nothing is done then.
type BackfillReply struct {
	Code              int
	Now, Gen, At      int64
	Enqueued, Existed int
}

// Backfill enqueues the items of past occurrences of a registration, due
// now (lua/backfill.lua): at most ScriptBatch, increasing, each before the
// watermark.
func (r *Runner) Backfill(ctx context.Context, name string, gen int64, occ []Occurrence) (BackfillReply, error) {
	keys := make([]string, 0, 1+len(occ))
	keys = append(keys, r.Keys.Rec(name))
	args := make([]interface{}, 0, 2+2*len(occ))
	args = append(args, name, gen)
	for _, o := range occ {
		keys = append(keys, r.Keys.Item(o.ID))
		args = append(args, o.At, o.ID)
	}
	res, err := r.run(ctx, scriptBackfill, keys, args...)
	if err != nil {
		return BackfillReply{}, err
	}
	if len(res) < 4 {
		return BackfillReply{}, errUnexpected("backfill", res)
	}
	rep := BackfillReply{Code: int(toInt(res[0])), Now: toInt(res[1])}
	if rep.Code == 1 {
		rep.Enqueued, rep.Existed = int(toInt(res[2])), int(toInt(res[3]))
	} else {
		rep.Gen, rep.At = toInt(res[2]), toInt(res[3])
	}
	return rep, nil
}
