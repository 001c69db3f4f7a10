package redisq

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// Register registers the recurring job name on q (a Queue or a
// Partitioned) with a typed value, as Queue.Register does with a payload: every occurrence carries v encoded
// by the kind's Codec, the kind's Name and its Defaults (then its opts;
// a RegisterJob among them replaces the Defaults, and the Kind stays the
// kind's). So a handler registered by k.Handle decodes every occurrence:
//
//	var digest = redisq.JobKind[Digest]{Name: "digest"}
//	daily, _ := redisq.Cron("CRON_TZ=Europe/Paris 0 9 * * *")
//	_, err := digest.Register(ctx, q, "digest", daily, Digest{List: "all"})
func (k JobKind[T]) Register(ctx context.Context, q Recurring, name string, s Schedule, v T, opts ...RegisterOption) (RegisterOutcome, error) {
	b, err := k.codec().Marshal(v)
	if err != nil {
		return 0, fmt.Errorf("redisq: encoding the payload of registration %q (kind %q): %w", name, k.Name, err)
	}
	job := RegisterJob(jobOf(slices.Clip(k.Defaults)))
	kind := func(c *registerConfig) { c.job.Kind = k.Name }
	return q.Register(ctx, name, s, b, append(append([]RegisterOption{job}, opts...), kind)...)
}

// typedKinds records, for each kind that a typed handler (JobKind.Handle,
// HandleJSON) was registered for in this process, how it decodes a
// payload: Queue.Register warns of a registration of that kind whose
// payload it could not decode, which would dead-letter every occurrence.
// A warning, not a refusal: the record is the process's, and a kind's
// name may mean another type in another Mux of the same process.
var typedKinds struct {
	mu     sync.Mutex
	decode map[string][]kindDecoder // guarded by mu
}

// kindDecoder is one typed handler's decoding of its kind's payloads.
type kindDecoder struct {
	typ    string // the handler's type, for the error
	decode func([]byte) error
}

// noteTyped records that a handler of kind decodes its payloads with d.
func noteTyped(kind string, d kindDecoder) {
	typedKinds.mu.Lock()
	defer typedKinds.mu.Unlock()
	if typedKinds.decode == nil {
		typedKinds.decode = map[string][]kindDecoder{}
	}
	typedKinds.decode[kind] = append(typedKinds.decode[kind], d)
}

// checkTypedPayload returns, for each typed handler of kind in this
// process that could not decode payload, why.
func checkTypedPayload(name, kind string, payload []byte) []error {
	typedKinds.mu.Lock()
	ds := typedKinds.decode[kind]
	typedKinds.mu.Unlock()
	var errs []error
	for _, d := range ds {
		if err := d.decode(payload); err != nil {
			errs = append(errs, fmt.Errorf("its payload does not decode as %s, the type of kind %q's handler, so every occurrence would be dead-lettered by it (register it with JobKind[%s].Register): %w",
				d.typ, kind, d.typ, err))
		}
	}
	return errs
}
