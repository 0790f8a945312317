package internal_test

import (
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

// The docs name only what exists: every path, Go identifier, test name and
// link named by the project's markdown (README.md, docs/, …) and by the
// comments of its Go files (both modules: this one and infra/cdk; generated
// files and third_party/ aside). Stale names crept in whenever code moved
// (package comments pointing at packages that never existed, a sample
// using a type from the wrong package); this fails on each file:line that
// names what is not there. It parses source and reads files only (go list
// runs only to excuse a name of another module, below): no build, no
// emulator.
//
// What counts as a reference, and why. Anything else is prose the test
// cannot judge, and it leaves it alone rather than guess:
//
//   - Paths: a token that starts with one of the repository's top-level
//     directories (read from the checkout, hidden and .gitignore'd ones
//     aside: internal/, functions/, cmd/, scripts/, infra/cdk/, docs/, …),
//     alone or after ./ or this module's import path, must exist. A
//     <placeholder> or * matches any name, a trailing … or /... any rest; a
//     token right after another "/" belongs to someone else's path or URL
//     (…/aws-sdk-go-v2/internal/…). A path may also start at a directory
//     beside a Go comment's file or beside one of its parents (wire/jobsfn
//     from internal/jobkinds), or in markdown at one in internal/
//     (observe/costmodel): it counts when that first directory exists and
//     the path has no placeholder (S3 keys such as jobs/<tenant>/… share
//     names with packages). Not paths: rates (events/s), and a file the
//     reader makes from a committed example beside it (stages/prod.json
//     from prod.example.json).
//   - Identifiers: pkg.Name, pkg.Type.Member and pkg.Prefix* where pkg is
//     ours: the package clause of one of the project's packages (so
//     internal/webhook/stripe is stripe) and, in a Go file, not a name the
//     file imports from another module. A qualifier that names no package
//     of ours is another library's (lambda.Start, events.SQSEvent,
//     slog.Info, config.LoadDefaultConfig) and is not checked; nor is a
//     lowercase pkg.name, more often a file, a JSON field or a host than an
//     unexported name. The name passes when a package of ours with that
//     clause declares it (any file, tests included), or, failing that, a
//     package of another module the project imports under the same name
//     does (stripe-go's package is also stripe). A Member must be a field
//     (promoted ones too) or a method of the type, when the type is ours and
//     all its members are known; so must Type.Member in a Go comment when
//     Type is a type of the comment's own package (Config.SignIn).
//   - Tests: TestX, BenchmarkX, ExampleX and FuzzX (before a subtest's "/")
//     must be a function of some _test.go file, or a name declared
//     otherwise (a constant ExampleStageFile). On a line with -run a name is
//     a pattern and a prefix of a test's name passes. A one-letter name
//     (TestX) is a placeholder; pkg.TestX is checked as an identifier (a
//     test of another library when pkg is not ours).
//   - Links: a markdown link to a relative path must reach a file and its
//     #anchor, in markdown, one of that file's headings.
//
// A fenced block right after a "<!-- sample: … -->" line is code a reader
// is to write (a new kind, a new provider) and is not checked: mark only
// such blocks, and prefer a <placeholder> (fn_<name>.go, <Name>Deps) in
// prose, which is checked against what it matches.
func TestDocsNameWhatExists(t *testing.T) {
	t.Parallel()
	c := loadCorpus(t)
	require.Greater(t, len(c.byName), 50, "the project's packages were parsed")
	require.Greater(t, len(c.tests), 500, "the project's tests were found")
	require.NotEmpty(t, c.markdown, "the project's markdown was found")

	var stale []string
	var n refCounts
	for _, f := range c.goFiles {
		for _, cm := range f.comments {
			stale = append(stale, c.check(f.path, cm.line, cm.text, f, &n)...)
		}
	}
	for _, md := range c.markdown {
		stale = append(stale, c.checkMarkdown(md, &n)...)
	}
	t.Logf("judged %d paths, %d identifiers, %d test names and %d links in %d markdown and %d Go files",
		n.paths, n.idents, n.tests, n.links, len(c.markdown), len(c.goFiles))
	require.Greater(t, n.paths, 100, "paths were found")
	require.Greater(t, n.idents, 100, "identifiers of ours were found")
	slices.Sort(stale)
	stale = slices.Compact(stale)
	if len(stale) > 0 {
		t.Errorf("%d references to what does not exist: fix the doc or comment to say what is true now\n%s",
			len(stale), strings.Join(stale, "\n"))
	}
}

// The checker finds what it is meant to, rule by rule, and lets pass what
// is not a reference of ours, so a change that blinds it (or makes it cry
// wolf) fails here. The probes are built from the parsed project, not from
// today's names.
func TestDocsCheckerCatchesStaleNames(t *testing.T) {
	t.Parallel()
	c := loadCorpus(t)
	// A package of ours with a type whose members are all known, and one
	// of its members; and an adapter-like directory two floors down.
	var pkg, typ, member, nested string
	for _, name := range slices.Sorted(maps.Keys(c.byName)) {
		p := c.byName[name][0]
		for _, tn := range slices.Sorted(maps.Keys(p.types)) {
			if ti := p.types[tn]; typ == "" && !ti.open && len(ti.embeds) == 0 && len(ti.members) > 0 && p.names[tn] && unicode.IsUpper(rune(tn[0])) {
				for m := range ti.members {
					if unicode.IsUpper(rune(m[0])) {
						pkg, typ, member = name, tn, m
						break
					}
				}
			}
		}
		if parts := strings.Split(p.dir, "/"); nested == "" && len(parts) == 3 && parts[0] == "internal" {
			nested = p.dir
		}
	}
	require.NotEmpty(t, typ, "a type with known members")
	require.NotEmpty(t, nested, "a package two floors down")
	var nestedDoc string // a markdown file in a folder
	for _, md := range c.markdown {
		if strings.Contains(md.path, "/") {
			nestedDoc = md.path
		}
	}
	require.NotEmpty(t, nestedDoc, "a markdown file in a folder")
	folder, leaf := path.Split(strings.TrimPrefix(nested, "internal/"))
	inGo := &goFile{path: "internal/probe/probe.go", dir: "internal/probe", pkg: "probe",
		imports: map[string]string{"elsewhere": "example.com/" + pkg}}
	inGo.imports[pkg] = "example.com/other/" + pkg
	inPkg := &goFile{path: c.byName[pkg][0].dir + "/probe.go", dir: c.byName[pkg][0].dir, pkg: pkg, imports: map[string]string{}}

	for _, tc := range []struct {
		line string
		gf   *goFile
		want string // a substring of the one finding; "" for none
	}{
		{"see internal/nosuchdir for it", nil, "internal/nosuchdir"},
		{"see " + nestedDoc + "#no-such-heading", nil, "has no heading #no-such-heading"},
		{"see " + nested + " and ./" + nested + "/..., " + nested + "/… or " + nested + "/*.go", nil, ""},
		{"see `" + path.Dir(nested) + "/<name>/`", nil, ""},
		{"github.com/siteswarm/eventplatform/internal/nosuch", nil, "internal/nosuch"},
		{"github.com/aws/aws-sdk-go-v2/internal/configsources and https://example.com/internal/x", nil, ""},
		{"10 " + c.roots[0] + "/s at peak", nil, ""},
		{folder + leaf + " and " + folder + "nosuchpkg", inGo, folder + "nosuchpkg"},
		{"jobs/<tenant>/x.json and application/json", inGo, ""},
		{"`" + pkg + ".NoSuchIdentifierAnywhere`", nil, pkg + ".NoSuchIdentifierAnywhere"},
		{pkg + "." + typ + " and " + pkg + "." + typ + "." + member + " and " + pkg + "." + typ[:1] + "*", nil, ""},
		{pkg + "." + typ + ".NoSuchMember", nil, "has no field or method NoSuchMember"},
		{pkg + ".NoSuchIdentifierAnywhere, as the file imports " + pkg, inGo, ""},
		{typ + "." + member + " and " + typ + ".NoSuchMember", inPkg, typ + ".NoSuchMember"},
		{typ + ".NoSuchMember outside its package", inGo, ""},
		{"lambda.Start(h), slog.Info, events.SQSEvent, m.Event, x." + pkg + ".Nope", nil, ""},
		{"TestNoSuchTestAnywhere proves it", nil, "TestNoSuchTestAnywhere"},
		{"TestDocsNameWhatExists/sub, TestX, s3:TestEvent and flate.TestDegenerate", nil, ""},
		{"go test -run 'TestDocsName|TestArchitecture'", nil, ""},
		{"TestDocsName proves it", nil, "TestDocsName"},
	} {
		got := c.check("probe.md", 7, tc.line, tc.gf, &refCounts{})
		if tc.want == "" {
			require.Empty(t, got, tc.line)
			continue
		}
		require.Len(t, got, 1, tc.line)
		require.Contains(t, got[0], tc.want, tc.line)
		require.True(t, strings.HasPrefix(got[0], "probe.md:7: "), "the finding says where: %s", got[0])
	}

	sample := &mdFile{path: "probe.md", lines: []string{
		"<!-- sample: a kind a reader adds -->", "```go", pkg + ".NoSuchYet(" + pkg + ".NoSuchDepsYet{})", "```",
		"```go", pkg + ".NoSuchAfterTheSample", "```"}}
	got := c.checkMarkdown(sample, &refCounts{})
	require.Len(t, got, 1, "only the unmarked block is checked")
	require.Contains(t, got[0], "probe.md:6: "+pkg+".NoSuchAfterTheSample")

	md := c.markdown[0].path
	for _, tc := range []struct{ line, want string }{
		{"[a](" + path.Base(md) + ") and [b](https://example.com/x) and [c](#" + slices.Collect(maps.Keys(c.anchors[md]))[0] + ")", ""},
		{"[a](nosuch.md)", "nosuch.md: no such file"},
		{"[a](#no-such-heading)", "has no heading #no-such-heading"},
	} {
		got := c.checkLinks(md, 3, tc.line, &refCounts{})
		if tc.want == "" {
			require.Empty(t, got, tc.line)
			continue
		}
		require.Len(t, got, 1, tc.line)
		require.Contains(t, got[0], tc.want, tc.line)
	}
}

// docs/architecture.md §7 draws the floors with every package of internal/
// and cmd/ in them (by its directory's name): a package the drawing leaves
// out (internal/aws/lambdaesm was) is one a newcomer cannot place.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	t.Parallel()
	c := loadCorpus(t)
	var sec []string
	for _, md := range c.markdown {
		if md.path != "docs/architecture.md" {
			continue
		}
		in := false
		for _, l := range md.lines {
			if strings.HasPrefix(l, "## ") {
				in = strings.HasPrefix(l, "## 7.")
			}
			if in {
				sec = append(sec, l)
			}
		}
	}
	require.NotEmpty(t, sec, "docs/architecture.md has a section 7")
	text := strings.Join(sec, "\n")
	// A name given as a pattern (<fn>fn, <pkg>test; not a bare <role>)
	// names every package it matches.
	var patterns []*regexp.Regexp
	for _, m := range regexp.MustCompile(`\w+<\w+>\w*|<\w+>\w+`).FindAllString(text, -1) {
		patterns = append(patterns, regexp.MustCompile("^"+placeholder.ReplaceAllString(m, `\w+`)+"$"))
	}
	var missing []string
	for dir := range c.byDir {
		if !strings.HasPrefix(dir, "internal/") && !strings.HasPrefix(dir, "cmd/") {
			continue
		}
		name := path.Base(dir)
		if slices.ContainsFunc(patterns, func(p *regexp.Regexp) bool { return p.MatchString(name) }) {
			continue
		}
		if !regexp.MustCompile(`(^|[^\w-])` + regexp.QuoteMeta(name) + `($|[^\w-])`).MatchString(text) {
			missing = append(missing, dir)
		}
	}
	slices.Sort(missing)
	require.Empty(t, missing, "packages docs/architecture.md §7 does not name: add each to its floor's box (and the box's count)")
}
