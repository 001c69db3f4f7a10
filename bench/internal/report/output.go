package report

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"time"
)

// Output is what a command writes, from the flags both commands share:
// -md, -hist, -quiet, -json and -cpuprofile.
type Output struct {
	Command              string // its name: in the report's header and on stderr
	MD, Hist, Quiet      bool
	JSONPath, CPUProfile string
}

// Parse defines the flags of Output on flag.CommandLine next to the
// command's own, parses the command line and passes check the names of the
// flags given. When check fails, Parse prints its error and, unless that is
// a WrongCommand, the usage (about, then the flags), and exits with status 2.
func (o *Output) Parse(about string, check func(given map[string]bool) error) {
	flag.BoolVar(&o.MD, "md", false, "print markdown tables")
	flag.BoolVar(&o.Hist, "hist", true, "print a lateness histogram per implementation")
	flag.BoolVar(&o.Quiet, "quiet", false, "no progress line on stderr")
	flag.StringVar(&o.JSONPath, "json", "", "write results as JSON to this file")
	flag.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Usage = func() {
		out := flag.CommandLine.Output()
		fmt.Fprintln(out, about)
		fmt.Fprintf(out, "\nUsage: %s [flags]\n", o.Command)
		flag.PrintDefaults()
	}
	flag.Parse()
	given := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if err := check(given); err != nil {
		o.Warnf("%v", err)
		var wrong WrongCommand
		if !errors.As(err, &wrong) {
			flag.Usage()
		}
		os.Exit(2)
	}
}

// WrongCommand is an -impl that the other command measures: the error
// names that command, in one line.
type WrongCommand struct {
	Impl    string // as given
	Where   string // how it runs: "on Redis", "in process"
	Command string // the command that measures it
}

func (e WrongCommand) Error() string {
	return fmt.Sprintf("-impl %s runs %s: use %s -impl %[1]s (go run ./bench/%[3]s)", e.Impl, e.Where, e.Command)
}

// Main runs a command once its flags are checked: it starts -cpuprofile,
// runs run on a Report with meta, then prints the report on stdout with
// the command's sections and writes it to -json. An error from run is
// fatal when the report holds no measurement; else it is printed and what
// was measured is reported.
func (o *Output) Main(meta Meta, run func(rep *Report) error, s Sections) {
	if o.CPUProfile != "" {
		f, err := os.Create(o.CPUProfile)
		if err != nil {
			o.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			o.Fatal(err)
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	rep := Report{Meta: meta}
	if err := run(&rep); err != nil {
		if len(rep.Results) == 0 && (rep.Capacity == nil || len(rep.Capacity.Loops) == 0) {
			o.Fatal(err)
		}
		o.Warnf("%v", err)
	}
	rep.Meta.LoadAvg = loadAvg()
	rep.Print(os.Stdout, o.Command, o.MD, o.Hist, s)
	if o.JSONPath != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			o.Fatal(err)
		}
		if err := os.WriteFile(o.JSONPath, append(b, '\n'), 0o644); err != nil {
			o.Fatal(err)
		}
	}
}

// Warnf prints a line on stderr, after the command's name.
func (o *Output) Warnf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, o.Command+": "+format+"\n", args...)
}

// Fatal prints err on stderr, after the command's name, and exits with
// status 1.
func (o *Output) Fatal(err error) {
	o.Warnf("%v", err)
	os.Exit(1)
}

// loadAvg returns the 1, 5 and 15 minute load averages where the OS has
// /proc/loadavg: other work on the machine shows up in tail lateness.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// Progress prints a status line on stderr, unless -quiet, until the
// returned function is called: offered and delivered of n items since
// start.
func (o *Output) Progress(name string, n int, offered, delivered *atomic.Int64, start time.Time) func() {
	if o.Quiet {
		return func() {}
	}
	fi, _ := os.Stderr.Stat()
	tty := fi != nil && fi.Mode()&os.ModeCharDevice != 0
	every := time.Second
	if tty {
		every = 200 * time.Millisecond
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	line := func() string {
		return fmt.Sprintf("%-22s offered %9d/%d  delivered %9d/%d  t=%6.2fs",
			name, offered.Load(), n, delivered.Load(), n, time.Since(start).Seconds())
	}
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				if tty {
					fmt.Fprintf(os.Stderr, "\r%s", line())
				} else {
					fmt.Fprintln(os.Stderr, line())
				}
			case <-stop:
				if tty {
					fmt.Fprintf(os.Stderr, "\r%s\n", line())
				}
				return
			}
		}
	}()
	return func() { close(stop); <-done }
}
