package redisq

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The storage layer is internal/rdb, and nothing else talks to Redis: no
// file of package redisq (tests aside) sends a command through a go-redis
// client, spells a key name, or compares a raw state code. The package is
// type-checked from source, so that a call is found by the type of its
// receiver, whatever the variable is called.
func TestNoSideDoorsIntoStorage(t *testing.T) {
	fset := token.NewFileSet()
	var files []*ast.File
	ents, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		n := e.Name()
		if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	if _, err := conf.Check("github.com/dq-go/delayqueue/redisq", fset, files, info); err != nil {
		t.Fatal(err)
	}
	const goredis = "github.com/redis/go-redis/v9"
	// Methods of the client that are not commands.
	allowed := map[string]bool{"Options": true, "Close": true}
	for sel, s := range info.Selections {
		if s.Kind() != types.MethodVal || s.Obj().Pkg() == nil || s.Obj().Pkg().Path() != goredis || allowed[s.Obj().Name()] {
			continue
		}
		t.Errorf("%s: %s sends a Redis command outside internal/rdb", fset.Position(sel.Pos()), s.Obj().Name())
	}
	// A key name: a hash tag, or a key's suffix after it.
	keyName := regexp.MustCompile(`\{dq|\}:[a-z]`)
	codes := map[string]bool{"s": true, "l": true, "d": true, "c": true}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.BasicLit:
				if x.Kind != token.STRING {
					return true
				}
				v, err := strconv.Unquote(x.Value)
				if err == nil && keyName.MatchString(v) {
					t.Errorf("%s: %q spells a key name outside internal/rdb", fset.Position(x.Pos()), v)
				}
			case *ast.BinaryExpr:
				if x.Op != token.EQL && x.Op != token.NEQ {
					return true
				}
				for _, side := range []ast.Expr{x.X, x.Y} {
					if lit, ok := side.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						if v, _ := strconv.Unquote(lit.Value); codes[v] {
							t.Errorf("%s: compares a raw state code %q outside internal/rdb", fset.Position(lit.Pos()), v)
						}
					}
				}
			}
			return true
		})
	}
}
