package dqprom

// Joined returns how many Collect calls of c joined another's reading of
// Redis instead of reading it themselves.
func Joined(c *RedisCollector) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.joined
}

// SetLabelHash replaces the hash that ends cut labels, until restore.
func SetLabelHash(f func(string) string) (restore func()) {
	old := labelHash
	labelHash = f
	return func() { labelHash = old }
}

// WorkerLabels returns the queue and kind labels w gives a message of the
// queue named queue and of that kind.
func WorkerLabels(w *WorkerMetrics, queue, kind string) (string, string) {
	return w.labels(queue, kind)
}
