// Command modproxy publishes a module directory into a GOPROXY directory at
// a version, as tagging it and fetching it through the module proxy would:
//
//	go run ./scripts/modproxy -proxy /tmp/proxy -version v1.2.3 DIR...
//
// writes, for the module whose go.mod is in each DIR,
// PROXY/<escaped module path>/@v/{list,VERSION.info,VERSION.mod,VERSION.zip}.
// Used with GOPROXY=file:///tmp/proxy,... the go command then downloads the
// module from there (scripts/release-check.sh).
//
// The zip holds what the go command's own module zips hold (the rules of
// golang.org/x/mod/zip): the regular files under DIR, each named
// module@version/path, without subdirectories that hold a go.mod (nested
// modules, published on their own), version control directories,
// vendored packages and symbolic links. The go command checks the rest (file
// names, size limits) when it extracts the zip, as it would for a tag.
// Standard library only, so the root module keeps zero dependencies.
package main

import (
	"archive/zip"
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

func main() {
	proxy := flag.String("proxy", "", "the GOPROXY directory to write into (created if missing)")
	version := flag.String("version", "", "the version to publish, e.g. v1.2.3")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: modproxy -proxy DIR -version vX.Y.Z MODULEDIR...")
		flag.PrintDefaults()
	}
	flag.Parse()
	// The go command checks the version's form when it reads the proxy.
	if *proxy == "" || !strings.HasPrefix(*version, "v") || flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	for _, dir := range flag.Args() {
		mod, err := publish(*proxy, dir, *version)
		if err != nil {
			fmt.Fprintf(os.Stderr, "modproxy: %s: %v\n", dir, err)
			os.Exit(1)
		}
		fmt.Printf("published %s@%s\n", mod, *version)
	}
}

// publish writes dir's module into proxy at version and returns its path.
func publish(proxy, dir, version string) (string, error) {
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", err
	}
	mod, err := modulePath(gomod)
	if err != nil {
		return "", err
	}
	vdir := filepath.Join(proxy, filepath.FromSlash(escapePath(mod)), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return "", err
	}
	base := filepath.Join(vdir, version)
	if err := writeZip(base+".zip", dir, mod+"@"+version); err != nil {
		return "", err
	}
	if err := os.WriteFile(base+".mod", gomod, 0o644); err != nil {
		return "", err
	}
	info, err := json.Marshal(struct{ Version, Time string }{version, time.Now().UTC().Format(time.RFC3339)})
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(base+".info", info, 0o644); err != nil {
		return "", err
	}
	return mod, addToList(filepath.Join(vdir, "list"), version)
}

// modulePath returns the path the module directive of a go.mod declares.
func modulePath(gomod []byte) (string, error) {
	sc := bufio.NewScanner(strings.NewReader(string(gomod)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "module" {
			if p, err := strconv.Unquote(f[1]); err == nil {
				return p, nil
			}
			return f[1], nil
		}
	}
	return "", errors.New("go.mod has no module directive")
}

// escapePath is the module proxy's case encoding of a module path: each
// upper-case letter becomes '!' and its lower case, so that paths differing
// only in case stay apart on case-insensitive file systems.
func escapePath(p string) string {
	var b strings.Builder
	for _, r := range p {
		if unicode.IsUpper(r) {
			b.WriteByte('!')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// addToList adds version to a proxy's list file, once.
func addToList(list, version string) error {
	old, err := os.ReadFile(list)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	versions := strings.Fields(string(old))
	if slices.Contains(versions, version) {
		return nil
	}
	return os.WriteFile(list, []byte(strings.Join(append(versions, version), "\n")+"\n"), 0o644)
}

// writeZip writes the module zip of dir, its files named prefix/path.
func writeZip(name, dir, prefix string) error {
	files, err := moduleFiles(dir)
	if err != nil {
		return err
	}
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	for _, rel := range files {
		if err := addFile(zw, filepath.Join(dir, filepath.FromSlash(rel)), prefix+"/"+rel); err != nil {
			f.Close()
			return err
		}
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// moduleFiles lists the files of dir's module, slash-separated and relative
// to dir.
func moduleFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "." {
				return nil
			}
			switch d.Name() {
			case ".bzr", ".git", ".hg", ".svn":
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir // a nested module
			}
			return nil
		}
		if !d.Type().IsRegular() || vendored(rel) {
			return nil // symbolic links, irregular files and vendored packages are left out
		}
		files = append(files, rel)
		return nil
	})
	return files, err
}

// addFile copies file into the zip as name, with its mode and time.
func addFile(zw *zip.Writer, file, name string) error {
	src, err := os.Open(file)
	if err != nil {
		return err
	}
	defer src.Close()
	info, err := src.Stat()
	if err != nil {
		return err
	}
	h, err := zip.FileInfoHeader(info)
	if err != nil {
		return err
	}
	h.Name, h.Method = name, zip.Deflate
	w, err := zw.CreateHeader(h)
	if err != nil {
		return err
	}
	_, err = io.Copy(w, src)
	return err
}

// vendored reports whether rel is in a package under a vendor directory,
// which a module zip leaves out (vendor/modules.txt itself stays).
func vendored(rel string) bool {
	var rest string
	if after, ok := strings.CutPrefix(rel, "vendor/"); ok {
		rest = after
	} else if _, after, ok := strings.Cut(rel, "/vendor/"); ok {
		rest = after
	} else {
		return false
	}
	return strings.Contains(rest, "/")
}
