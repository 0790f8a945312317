package internal_test

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

// The corpus TestDocsNameWhatExists judges: the project's Go files (their
// declarations and comments) and markdown (lines and headings), parsed once.

// repoRoot is the repository's root from this package's directory.
const repoRoot = ".."

// modulePath is the runtime module's import path; infra/cdk's module sits
// under it (…/infra/cdk), so one prefix maps both modules' imports to
// directories.
const modulePath = "github.com/siteswarm/eventplatform"

type typeInfo struct {
	members map[string]bool
	embeds  []string // embedded types declared in the same package
	open    bool     // embeds or is defined as a type of another package: any member may be promoted
}

type pkgInfo struct {
	dir   string // from the repository root, slash-separated
	names map[string]bool
	types map[string]*typeInfo
}

type commentLine struct {
	line int
	text string
}

type goFile struct {
	path     string
	dir      string
	pkg      string
	imports  map[string]string // name in the file → import path
	comments []commentLine
}

type mdFile struct {
	path  string
	lines []string
}

type corpus struct {
	roots    []string // top-level directories a path may start with
	ignored  ignoredNames
	byName   map[string][]*pkgInfo // package name → our packages of that name
	byDir    map[string]*pkgInfo
	tests    map[string]bool
	goFiles  []*goFile
	markdown []*mdFile
	anchors  map[string]map[string]bool // markdown path → its headings' anchors

	extMu    sync.Mutex
	extNames map[string]bool // pkg.Name → whether another module's package declares it
}

var (
	corpusOnce sync.Once
	theCorpus  *corpus
	corpusErr  error
)

func loadCorpus(t *testing.T) *corpus {
	t.Helper()
	corpusOnce.Do(func() { theCorpus, corpusErr = parseCorpus() })
	require.NoError(t, corpusErr)
	return theCorpus
}

func parseCorpus() (*corpus, error) {
	c := &corpus{
		byName:   map[string][]*pkgInfo{},
		byDir:    map[string]*pkgInfo{},
		tests:    map[string]bool{},
		anchors:  map[string]map[string]bool{},
		extNames: map[string]bool{},
	}
	ignored, err := gitignored()
	if err != nil {
		return nil, err
	}
	c.ignored = ignored
	entries, err := os.ReadDir(repoRoot)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.IsDir() && !skipDir(e.Name()) && !ignored.at(".", e.Name()) {
			c.roots = append(c.roots, e.Name())
		}
	}
	fset := token.NewFileSet()
	err = filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(strings.TrimPrefix(p, repoRoot), string(filepath.Separator)))
		if d.IsDir() {
			if p != repoRoot && (skipDir(d.Name()) || ignored.at(path.Dir(rel), d.Name()) || d.Name() == "testdata" || rel == "third_party") {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case strings.HasSuffix(rel, ".go"):
			return c.addGo(fset, p, rel)
		case strings.HasSuffix(rel, ".md"):
			return c.addMarkdown(p, rel)
		}
		return nil
	})
	return c, err
}

// skipDir: hidden directories (.git, .cache, .ci's scratch) and installed
// node packages are not the project's.
func skipDir(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "node_modules"
}

// ignoredNames are the plain names .gitignore lists: build output such as
// bin/ and cdk.out/ is absent from a fresh clone, so no doc may count on it.
type ignoredNames struct{ anywhere, atRoot map[string]bool }

func (n ignoredNames) at(dir, name string) bool {
	return n.anywhere[name] || (dir == "." && n.atRoot[name])
}

func gitignored() (ignoredNames, error) {
	n := ignoredNames{anywhere: map[string]bool{}, atRoot: map[string]bool{}}
	b, err := os.ReadFile(filepath.Join(repoRoot, ".gitignore"))
	if err != nil {
		return n, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSuffix(strings.TrimSpace(l), "/")
		name := strings.TrimPrefix(l, "/")
		if name == "" || strings.ContainsAny(name, "*#!/") {
			continue
		}
		if strings.HasPrefix(l, "/") {
			n.atRoot[name] = true
		} else {
			n.anywhere[name] = true
		}
	}
	return n, nil
}

var generatedCode = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

func (c *corpus) addGo(fset *token.FileSet, p, rel string) error {
	src, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	f, err := parser.ParseFile(fset, p, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return err
	}
	dir := path.Dir(rel)
	name := strings.TrimSuffix(f.Name.Name, "_test")
	pkg := c.byDir[dir]
	if pkg == nil {
		pkg = &pkgInfo{dir: dir, names: map[string]bool{}, types: map[string]*typeInfo{}}
		c.byDir[dir] = pkg
		if name != "main" {
			c.byName[name] = append(c.byName[name], pkg)
		}
	}
	testFile := strings.HasSuffix(rel, "_test.go")
	for _, d := range f.Decls {
		addDecl(pkg, d, testFile, c.tests)
	}
	if generatedCode.Match(src) {
		return nil
	}
	gf := &goFile{path: rel, dir: dir, pkg: name, imports: map[string]string{}}
	for _, imp := range f.Imports {
		ip := strings.Trim(imp.Path.Value, `"`)
		n := importName(ip)
		if imp.Name != nil {
			n = imp.Name.Name
		}
		gf.imports[n] = ip
	}
	for _, g := range f.Comments {
		for _, cm := range g.List {
			line := fset.Position(cm.Slash).Line
			for i, l := range strings.Split(cm.Text, "\n") {
				gf.comments = append(gf.comments, commentLine{line: line + i, text: l})
			}
		}
	}
	c.goFiles = append(c.goFiles, gf)
	return nil
}

var (
	majorVersion = regexp.MustCompile(`^v[0-9]+$`)
	majorSuffix  = regexp.MustCompile(`\.v[0-9]+$`)
)

// importName guesses the name an import path declares when the file gives
// none: its last element, less a major version and go-/-go affixes. Only
// other modules' imports need the guess (ours are looked up by directory).
func importName(ip string) string {
	parts := strings.Split(ip, "/")
	n := parts[len(parts)-1]
	if majorVersion.MatchString(n) && len(parts) > 1 {
		n = parts[len(parts)-2]
	}
	n = majorSuffix.ReplaceAllString(n, "") // gopkg.in/yaml.v3
	n = strings.TrimPrefix(strings.TrimSuffix(n, "-go"), "go-")
	return strings.ReplaceAll(n, "-", "")
}

func addDecl(pkg *pkgInfo, d ast.Decl, testFile bool, tests map[string]bool) {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil {
			pkg.names[d.Name.Name] = true
			if testFile && testFunc.MatchString(d.Name.Name) {
				tests[d.Name.Name] = true
			}
			return
		}
		if len(d.Recv.List) == 1 {
			if recv := receiverType(d.Recv.List[0].Type); recv != "" {
				pkg.typeOf(recv).members[d.Name.Name] = true
			}
		}
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.ValueSpec:
				for _, n := range s.Names {
					pkg.names[n.Name] = true
				}
			case *ast.TypeSpec:
				pkg.names[s.Name.Name] = true
				ti := pkg.typeOf(s.Name.Name)
				addMembers(ti, s.Type, s.Assign.IsValid())
			}
		}
	}
}

func (p *pkgInfo) typeOf(name string) *typeInfo {
	ti := p.types[name]
	if ti == nil {
		ti = &typeInfo{members: map[string]bool{}}
		p.types[name] = ti
	}
	return ti
}

// addMembers records a type's fields and interface methods; an alias, or a
// type defined as another named type, may carry members declared elsewhere.
func addMembers(ti *typeInfo, expr ast.Expr, alias bool) {
	if alias {
		ti.open = true
		return
	}
	switch e := expr.(type) {
	case *ast.StructType:
		for _, f := range e.Fields.List {
			if len(f.Names) == 0 {
				embedded(ti, f.Type)
			}
			for _, n := range f.Names {
				ti.members[n.Name] = true
			}
		}
	case *ast.InterfaceType:
		for _, m := range e.Methods.List {
			if len(m.Names) == 0 {
				embedded(ti, m.Type)
			}
			for _, n := range m.Names {
				ti.members[n.Name] = true
			}
		}
	case *ast.Ident:
		// A type defined as another of the package has its fields; one
		// defined as a predeclared type has only its own methods.
		if !predeclared[e.Name] {
			ti.embeds = append(ti.embeds, e.Name)
		}
		ti.open = ti.open || e.Name == "error" || e.Name == "any"
	case *ast.ArrayType, *ast.MapType, *ast.ChanType, *ast.FuncType:
	default:
		ti.open = true
	}
}

var predeclared = map[string]bool{}

func init() {
	for _, n := range strings.Fields("any bool byte comparable complex64 complex128 error float32 float64 " +
		"int int8 int16 int32 int64 rune string uint uint8 uint16 uint32 uint64 uintptr") {
		predeclared[n] = true
	}
}

func embedded(ti *typeInfo, expr ast.Expr) {
	switch e := expr.(type) {
	case *ast.StarExpr:
		embedded(ti, e.X)
	case *ast.Ident:
		ti.members[e.Name] = true
		ti.embeds = append(ti.embeds, e.Name)
	case *ast.IndexExpr:
		embedded(ti, e.X)
	case *ast.IndexListExpr:
		embedded(ti, e.X)
	case *ast.SelectorExpr:
		ti.members[e.Sel.Name] = true
		ti.open = true
	default:
		ti.open = true // a union or constraint: no members to name
	}
}

func receiverType(expr ast.Expr) string {
	switch e := expr.(type) {
	case *ast.StarExpr:
		return receiverType(e.X)
	case *ast.IndexExpr:
		return receiverType(e.X)
	case *ast.IndexListExpr:
		return receiverType(e.X)
	case *ast.Ident:
		return e.Name
	}
	return ""
}

// hasMember reports whether a type of pkg has member m, following embedded
// types of the same package; known is false when the answer is not knowable.
func (p *pkgInfo) hasMember(typ, m string, seen map[string]bool) (has, known bool) {
	ti := p.types[typ]
	if ti == nil || seen[typ] {
		return false, ti != nil
	}
	seen[typ] = true
	if ti.members[m] {
		return true, true
	}
	known = !ti.open
	for _, e := range ti.embeds {
		h, k := p.hasMember(e, m, seen)
		if h {
			return true, true
		}
		known = known && k
	}
	return false, known
}

func (c *corpus) addMarkdown(p, rel string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	md := &mdFile{path: rel}
	anchors := map[string]bool{}
	seen := map[string]int{}
	fence := false
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		line := s.Text()
		md.lines = append(md.lines, line)
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
		}
		if !fence && strings.HasPrefix(line, "#") {
			a := anchor(strings.TrimLeft(line, "#"))
			if n := seen[a]; n > 0 {
				anchors[fmt.Sprintf("%s-%d", a, n)] = true
			}
			seen[a]++
			anchors[a] = true
		}
	}
	c.markdown = append(c.markdown, md)
	c.anchors[rel] = anchors
	return s.Err()
}

// anchor is GitHub's id for a heading: lower case, letters, digits, spaces
// as hyphens, "-" and "_" kept, the rest dropped.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}
