package rdb

import "context"

var (
	scriptDeadOne  = newScript("dead_one", kSched, kDead, kWake, kStats, kSeq).acked()
	scriptBulkDead = newScript("bulk_dead", kSched, kDead, kWake, kStats, kSeq).acked()
	scriptBulk     = newScript("bulk").acked()
)

// DeadOne requeues (revive) or deletes one dead item (lua/dead_one.lua):
// NotFound, Done, or InFlight standing for "not dead" (nothing changed).
func (r *Runner) DeadOne(ctx context.Context, id string, revive bool) (Found, error) {
	op := "delete"
	if revive {
		op = "requeue"
	}
	res, err := r.run(ctx, scriptDeadOne, []string{r.Keys.Item(id)}, id, op)
	if err != nil {
		return 0, err
	}
	switch toInt(res[0]) {
	case 0:
		return NotFound, nil
	case 2:
		return InFlight, nil
	}
	return Done, nil
}

// BulkDeadArgs is one batch of a bulk call on the dead set
// (lua/bulk_dead.lua).
type BulkDeadArgs struct {
	Revive  bool   // requeue; else delete
	Limit   int    // members to examine
	Skipped int64  // members earlier batches left (the offset)
	CutSeq  string // the cut-off, "" in the first batch (which reads it)
	CutAt   string
	Reason  string // only the items of this reason ("" for all)
}

// BulkDeadReply is what one batch did.
type BulkDeadReply struct {
	Examined, Skipped, Changed int64
	CutSeq, CutAt              string // "" when nothing was dead
}

// BulkDead runs one batch of requeuing or deleting the items dead at the
// cut-off.
func (r *Runner) BulkDead(ctx context.Context, a BulkDeadArgs) (BulkDeadReply, error) {
	op := "deldead"
	if a.Revive {
		op = "requeue"
	}
	res, err := r.run(ctx, scriptBulkDead, nil, op, a.Limit, a.Skipped, a.CutSeq, a.CutAt, a.Reason)
	if err != nil {
		return BulkDeadReply{}, err
	}
	b := BulkDeadReply{Examined: toInt(res[0]), Skipped: toInt(res[1]), Changed: toInt(res[2])}
	b.CutSeq, _ = res[3].(string)
	b.CutAt, _ = res[4].(string)
	return b, nil
}

// BulkOp is an operation of Bulk (lua/bulk.lua).
type BulkOp string

const (
	PurgeScheduled BulkOp = "purge_s"   // delete the first scheduled items
	MarkInFlight   BulkOp = "mark"      // mark in-flight items from the offset as cancelled
	DestroySched   BulkOp = "destroy_s" // delete the first items of a state, counting the keys deleted
	DestroyLease   BulkOp = "destroy_l"
	DestroyDead    BulkOp = "destroy_d"
	PurgeCompleted BulkOp = "purge_c" // delete the first completed items
	DestroyDone    BulkOp = "destroy_c"
)

// bulkKeys are the keys Bulk declares for each op.
func (r *Runner) bulkKeys(op BulkOp) []string {
	switch op {
	case PurgeScheduled:
		return []string{r.Keys.Sched, r.Keys.Stats}
	case PurgeCompleted:
		return []string{r.Keys.Done, r.Keys.Stats}
	case DestroyDone:
		return []string{r.Keys.Done}
	case MarkInFlight, DestroyLease:
		return []string{r.Keys.Lease}
	case DestroySched:
		return []string{r.Keys.Sched}
	}
	return []string{r.Keys.Dead}
}

// BulkReply is what one Bulk batch did: members examined, the zset's size
// before, and how many it changed.
type BulkReply struct {
	Examined, Size, Changed int64
}

// Bulk runs one batch of op on up to limit members (from offset, for
// MarkInFlight).
func (r *Runner) Bulk(ctx context.Context, op BulkOp, limit, offset int64) (BulkReply, error) {
	res, err := r.run(ctx, scriptBulk, r.bulkKeys(op), string(op), limit, offset)
	if err != nil {
		return BulkReply{}, err
	}
	return BulkReply{Examined: toInt(res[0]), Size: toInt(res[1]), Changed: toInt(res[2])}, nil
}
