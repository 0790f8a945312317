package internal_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// No package under internal/ compiles a regular expression at init. Every
// function links internal/aws/dynamo and sqsqueue, which import nearly
// every domain package, so every cold start ran every package-level
// regexp.MustCompile: 1.2-1.6 ms each for jobs and envelope alone (a
// bounded repetition such as {1,200} unrolls into as many states), for
// patterns a function may never use. Validators are small functions over
// bytes instead, each held to its regexp by a test (kit/matchtest); a
// pattern too involved to write out compiles on first use
// (sync.OnceValue), which this allows. local/ (the emulators: no function
// links it, functions/deps_test.go) and the test kits (<pkg>test, linked
// by tests only) are left out.
func TestNoRegexpCompiledAtInit(t *testing.T) {
	t.Parallel()
	var found []string
	files := 0
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p == "local" || d.Name() == "testdata" || (p != "." && strings.HasSuffix(d.Name(), "test")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		found = append(found, compilesAtInit(fset, f)...)
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, files, 300, "internal/'s Go files were read")
	require.Empty(t, found, "regexps compiled at init (every cold start pays them): write the pattern out as a function over bytes and hold it to the regexp in a test (kit/matchtest), or compile it on first use with sync.OnceValue")
}

// compilesAtInit lists where f compiles a regexp at init: in a
// package-level var's value or in an init func, the body of a function
// literal not called there aside (it runs when called, as
// sync.OnceValue's does).
func compilesAtInit(fset *token.FileSet, f *ast.File) []string {
	name := ""
	for _, imp := range f.Imports {
		if path, _ := strconv.Unquote(imp.Path.Value); path == "regexp" {
			name = "regexp"
			if imp.Name != nil {
				name = imp.Name.Name
			}
		}
	}
	if name == "" || name == "_" {
		return nil
	}
	var found []string
	var visit func(ast.Node) bool
	visit = func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if lit, ok := n.Fun.(*ast.FuncLit); ok { // called right away
				ast.Inspect(lit.Body, visit)
			}
		case *ast.FuncLit:
			return false
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && x.Name == name && strings.Contains(n.Sel.Name, "Compile") {
				found = append(found, fset.Position(n.Pos()).String()+": "+name+"."+n.Sel.Name)
			}
		}
		return true
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.GenDecl:
			if d.Tok == token.VAR {
				ast.Inspect(d, visit)
			}
		case *ast.FuncDecl:
			if d.Name.Name == "init" && d.Recv == nil && d.Body != nil {
				for _, s := range d.Body.List {
					ast.Inspect(s, visit)
				}
			}
		}
	}
	return found
}
