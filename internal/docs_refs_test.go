package internal_test

import (
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// The rules of TestDocsNameWhatExists (docs_test.go): what a reference is,
// and when it names something that exists.

var (
	// pkg.Name, pkg.Type.Member: not after a word, a dot (a field of a
	// value) or a hyphen; pkg.Prefix* names every name with that prefix.
	qualified = regexp.MustCompile(`(?:^|[^\w.\-])([a-z][a-z0-9_]*)\.([A-Z]\w*\*?)(?:\.([A-Z]\w*))?`)
	testFunc  = regexp.MustCompile(`^(Test|Benchmark|Example|Fuzz)([A-Z_0-9]\w*)?$`)
	// Not after a dot (a test of another package, flate.TestX) or a colon
	// (S3's s3:TestEvent).
	testName        = regexp.MustCompile(`(?:^|[^\w.:])((?:Test|Benchmark|Example|Fuzz)[A-Z_0-9]\w*)`)
	placeholderTest = regexp.MustCompile(`^(Test|Benchmark|Example|Fuzz)[A-Z]$`)
	// A rate (events/s, calls/day) is not a path.
	rate      = regexp.MustCompile(`^[a-z]+/(s|ms|sec|second|min|minute|h|hr|hour|day|week|month|year)$`)
	pathToken = regexp.MustCompile(`(?:^|[^\w.\-/])((?:\./|` + regexp.QuoteMeta(modulePath) + `/)?[A-Za-z_][\w.\-]*/[\w.\-/*<>…#]*)`)
	// Type.Member in a Go comment, Type a type of the comment's package.
	localMember = regexp.MustCompile(`(?:^|[^\w.])([A-Z]\w*)\.([A-Z]\w*)`)
	mdLink      = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// A fenced block right after this line is code a reader is to write (a
	// new job kind, a new provider): what it names may not exist yet.
	sampleMarker = regexp.MustCompile(`^\s*<!-- sample\b.*-->\s*$`)
)

// refCounts count the references judged, by kind.
type refCounts struct{ paths, idents, tests, links int }

// check returns the stale references on one line of file; gf is the Go
// file the line is a comment of (nil for markdown).
func (c *corpus) check(file string, line int, text string, gf *goFile, n *refCounts) []string {
	var stale []string
	report := func(ref, why string) {
		stale = append(stale, fmt.Sprintf("%s:%d: %s: %s", file, line, ref, why))
	}
	for _, m := range pathToken.FindAllStringSubmatch(text, -1) {
		why, ours := c.checkPath(m[1], gf)
		if ours {
			n.paths++
		}
		if why != "" {
			report(m[1], why)
		}
	}
	for _, ix := range qualified.FindAllStringSubmatchIndex(text, -1) {
		member := ""
		if ix[6] >= 0 {
			member = text[ix[6]:ix[7]]
		}
		why, ours := c.checkIdent(text[ix[2]:ix[3]], text[ix[4]:ix[5]], member, gf)
		if ours {
			n.idents++
		}
		if why != "" {
			report(text[ix[2]:ix[1]], why)
		}
	}
	if p := c.own(gf); p != nil {
		for _, m := range localMember.FindAllStringSubmatch(text, -1) {
			if _, isType := p.types[m[1]]; !isType || !p.names[m[1]] {
				continue
			}
			n.idents++
			if has, known := p.hasMember(m[1], m[2], map[string]bool{}); !has && known {
				report(m[1]+"."+m[2], fmt.Sprintf("%s (%s) has no field or method %s", m[1], p.dir, m[2]))
			}
		}
	}
	pattern := strings.Contains(text, "-run")
	for _, m := range testName.FindAllStringSubmatch(text, -1) {
		n.tests++
		if !c.testExists(m[1], pattern) {
			report(m[1], "no _test.go file declares it")
		}
	}
	return stale
}

// own is the package of a Go comment's file (nil for markdown).
func (c *corpus) own(gf *goFile) *pkgInfo {
	if gf == nil {
		return nil
	}
	return c.byDir[gf.dir]
}

// checkMarkdown returns the stale references of a markdown file, samples
// aside.
func (c *corpus) checkMarkdown(md *mdFile, n *refCounts) []string {
	var stale []string
	fence, sample := false, false
	for i, line := range md.lines {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			sample = fence && i > 0 && sampleMarker.MatchString(md.lines[i-1])
		}
		if sample {
			continue
		}
		stale = append(stale, c.check(md.path, i+1, line, nil, n)...)
		stale = append(stale, c.checkLinks(md.path, i+1, line, n)...)
	}
	return stale
}

// testExists reports whether a test of that name exists; a placeholder
// (TestX) and a name that is not a test (a constant ExampleStageFile) pass,
// and on a line with -run, where names are patterns, a prefix of a test's
// name does.
func (c *corpus) testExists(name string, pattern bool) bool {
	if c.tests[name] || placeholderTest.MatchString(name) {
		return true
	}
	for _, p := range c.byDir {
		if p.names[name] {
			return true
		}
	}
	if pattern {
		for t := range c.tests {
			if strings.HasPrefix(t, name) {
				return true
			}
		}
	}
	return false
}

// checkPath judges one path-like token: ours is false for what is not a
// path of the project, why says what is wrong with one that is.
func (c *corpus) checkPath(tok string, gf *goFile) (why string, ours bool) {
	rooted := false
	if rest, cut := strings.CutPrefix(tok, modulePath+"/"); cut {
		tok, rooted = rest, true
	} else if rest, cut := strings.CutPrefix(tok, "./"); cut {
		tok, rooted = rest, true
	}
	tok = strings.TrimRight(tok, ".,:;")
	tok, frag, _ := strings.Cut(tok, "#")
	tok = strings.TrimSuffix(strings.TrimSuffix(tok, "/..."), "...")
	tok = strings.TrimRight(strings.TrimSuffix(tok, "…"), "/")
	if rate.MatchString(tok) {
		return "", false
	}
	first, _, _ := strings.Cut(tok, "/")
	var bases []string
	switch {
	case slices.Contains(c.roots, first):
		bases = []string{""}
	case rooted:
		return "", false // ./bin/…, ./node_modules/…: not the project's sources
	case !strings.ContainsAny(tok, "<>"):
		// Relative to the comment's file's directory or one of its
		// parents; markdown abbreviates internal/'s (observe/costmodel).
		dir := "internal"
		if gf != nil {
			dir = gf.dir
		}
		// At the top, only the roots (above) count: build output such as
		// cdk.out/ exists in one checkout and not in the next.
		for ; dir != "."; dir = path.Dir(dir) {
			if skipDir(first) || c.ignored.at(dir, first) {
				break
			}
			if fi, err := os.Stat(filepath.Join(repoRoot, dir, first)); err == nil && fi.IsDir() {
				bases = append(bases, dir)
			}
		}
		if len(bases) == 0 {
			return "", false
		}
	default:
		return "", false
	}
	glob := placeholder.ReplaceAllString(strings.ReplaceAll(tok, "…", "*"), "*")
	for _, b := range bases {
		if matches, _ := filepath.Glob(filepath.Join(repoRoot, b, glob)); len(matches) > 0 {
			if anchors, ok := c.anchors[path.Join(b, glob)]; ok && frag != "" && !anchors[frag] {
				return fmt.Sprintf("%s has no heading #%s", path.Join(b, glob), frag), true
			}
			return "", true
		}
		// A file the reader makes from a committed example beside it
		// (infra/cdk/stages/prod.json from prod.example.json).
		if ext := path.Ext(glob); ext != "" {
			if matches, _ := filepath.Glob(filepath.Join(repoRoot, b, path.Dir(glob), "*.example"+ext)); len(matches) > 0 {
				return "", true
			}
		}
	}
	return "no such file or directory (one a reader is to make? name it with a <placeholder> its siblings match)", true
}

var placeholder = regexp.MustCompile(`<[^<>/]*>`)

// checkIdent judges pkg.Name(.Member): ours is false when pkg is not one
// of our packages, why says what is wrong with a reference that is.
func (c *corpus) checkIdent(q, name, member string, gf *goFile) (why string, ours bool) {
	cands := c.byName[q]
	if gf != nil {
		if ip, imported := gf.imports[q]; imported {
			rest, ourImport := strings.CutPrefix(ip, modulePath+"/")
			if !ourImport {
				return "", false // another module's package, as the file imports it
			}
			if p := c.byDir[rest]; p != nil {
				cands = []*pkgInfo{p}
			}
		}
	}
	if len(cands) == 0 {
		return "", false
	}
	var dirs []string
	for _, p := range cands {
		dirs = append(dirs, p.dir)
		if prefix, ok := strings.CutSuffix(name, "*"); ok {
			for n := range p.names {
				if strings.HasPrefix(n, prefix) {
					return "", true
				}
			}
			continue
		}
		if !p.names[name] {
			continue
		}
		if member == "" {
			return "", true
		}
		has, known := p.hasMember(name, member, map[string]bool{})
		if has || !known {
			return "", true
		}
		return fmt.Sprintf("%s.%s (%s) has no field or method %s", q, name, p.dir, member), true
	}
	ext, err := c.externalDeclares(q, name)
	if ext {
		return "", true
	}
	why = fmt.Sprintf("package %s (%s) declares no %s", q, strings.Join(dirs, ", "), name)
	if err != nil {
		why += fmt.Sprintf(" (nor could another module's package %s be read: %v)", q, err)
	}
	return why, true
}

// externalDeclares reports whether a package of another module that the
// project imports is named q and declares name. Only a name none of ours
// declares gets here, so go list runs rarely, and only for the imports whose
// path gives q as the package's name (stripe-go/v76 for stripe).
func (c *corpus) externalDeclares(q, name string) (bool, error) {
	c.extMu.Lock()
	defer c.extMu.Unlock()
	key := q + "." + name
	if has, ok := c.extNames[key]; ok {
		return has, nil
	}
	imports := map[string]map[string]bool{} // module directory → import paths
	for _, f := range c.goFiles {
		mod := "."
		if strings.HasPrefix(f.path, "infra/cdk/") {
			mod = "infra/cdk"
		}
		for _, ip := range f.imports {
			if importName(ip) != q || ip == modulePath || strings.HasPrefix(ip, modulePath+"/") {
				continue
			}
			if imports[mod] == nil {
				imports[mod] = map[string]bool{}
			}
			imports[mod][ip] = true
		}
	}
	has, err := externalDeclares(imports, q, name)
	if err == nil {
		c.extNames[key] = has
	}
	return has, err
}

// externalDeclares finds the import paths' directories (by module
// directory) with go list and reports whether one named q declares name.
func externalDeclares(imports map[string]map[string]bool, q, name string) (bool, error) {
	fset := token.NewFileSet()
	for mod, set := range imports {
		args := []string{"list", "-e", "-f", "{{.Name}} {{.Dir}}"}
		for ip := range set {
			args = append(args, ip)
		}
		cmd := exec.Command("go", args...)
		cmd.Dir = filepath.Join(repoRoot, mod)
		out, err := cmd.Output()
		if err != nil {
			return false, fmt.Errorf("go list in %s: %w", mod, err)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			pkg, dir, _ := strings.Cut(l, " ")
			if pkg != q || dir == "" {
				continue
			}
			files, err := filepath.Glob(filepath.Join(dir, "*.go"))
			if err != nil {
				return false, err
			}
			info := &pkgInfo{names: map[string]bool{}, types: map[string]*typeInfo{}}
			for _, fn := range files {
				src, err := os.ReadFile(fn)
				// Only files that spell the name can declare it.
				if err != nil || strings.HasSuffix(fn, "_test.go") || !strings.Contains(string(src), name) {
					continue
				}
				f, err := parser.ParseFile(fset, fn, src, parser.SkipObjectResolution)
				if err != nil {
					continue
				}
				for _, d := range f.Decls {
					addDecl(info, d, false, map[string]bool{})
				}
			}
			if info.names[name] {
				return true, nil
			}
		}
	}
	return false, nil
}

// checkLinks judges a markdown line's relative links and their anchors.
func (c *corpus) checkLinks(file string, line int, text string, n *refCounts) []string {
	var stale []string
	for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		n.links++
		p, frag, _ := strings.Cut(target, "#")
		dest := file
		if p != "" {
			dest = path.Join(path.Dir(file), p)
			if _, err := os.Stat(filepath.Join(repoRoot, dest)); err != nil {
				stale = append(stale, fmt.Sprintf("%s:%d: %s: no such file or directory", file, line, target))
				continue
			}
		}
		if anchors, ok := c.anchors[dest]; ok && frag != "" && !anchors[frag] {
			stale = append(stale, fmt.Sprintf("%s:%d: %s: %s has no heading #%s", file, line, target, dest, frag))
		}
	}
	return stale
}
