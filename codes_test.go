package agentrt_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/session"
)

// constsOfType parses file and returns the string constants of the named
// type it declares: their names by value.
func constsOfType(t *testing.T, file, typ string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != typ {
				continue
			}
			for i, name := range vs.Names {
				out[stringLit(t, vs.Values[i])] = name.Name
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s declares no constants of type %s", file, typ)
	}
	return out
}

func stringLit(t *testing.T, e ast.Expr) string {
	t.Helper()
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		t.Fatalf("%T is not a string literal", e)
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// codeGroups reads codes.go's constant block: each group's name (its
// comment up to the first ':' or '.') and the codes under it, in order.
// Kinds' codes are written string(FailX): kinds gives their values.
func codeGroups(t *testing.T, kinds map[string]string) (names []string, groups map[string][]string) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "codes.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	kindValue := map[string]string{}
	for v, name := range kinds {
		kindValue[name] = v
	}
	groups = map[string][]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		group := ""
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			if vs.Doc != nil {
				text := strings.TrimSpace(vs.Doc.Text())
				group = text[:strings.IndexAny(text, ":.")]
				names = append(names, group)
			}
			if group == "" {
				continue // a constant outside the code groups
			}
			for i := range vs.Names {
				var code string
				switch v := vs.Values[i].(type) {
				case *ast.CallExpr: // string(FailX)
					code = kindValue[v.Args[0].(*ast.Ident).Name]
				default:
					code = stringLit(t, v)
				}
				if code == "" {
					t.Fatalf("codes.go: cannot read the value of %s", vs.Names[i].Name)
				}
				groups[group] = append(groups[group], code)
			}
		}
	}
	return names, groups
}

// TestCodesCatalog checks the catalog against itself and the source: no
// code twice, every kind with its own code, every constant of codes.go
// and every code of package model in the table, and each row complete.
func TestCodesCatalog(t *testing.T) {
	codes := agentrt.Codes()
	seen := map[string]bool{}
	for i, c := range codes {
		if seen[c.Code] {
			t.Errorf("code %q is in the catalog twice", c.Code)
		}
		seen[c.Code] = true
		if i > 0 && codes[i-1].Code >= c.Code {
			t.Errorf("the catalog is not sorted: %q before %q", codes[i-1].Code, c.Code)
		}
		if got, ok := agentrt.LookupCode(c.Code); !ok || !cmp.Equal(got, c) {
			t.Errorf("LookupCode(%q) = %+v, %v; want %+v", c.Code, got, ok, c)
		}
		if c.Meaning == "" || http.StatusText(c.HTTP) == "" || !slices.Contains([]int{1, 2, 3, 4, 130}, c.Exit) {
			t.Errorf("code %q: incomplete row %+v", c.Code, c)
		}
	}
	if _, ok := agentrt.LookupCode("no_such_code"); ok {
		t.Error("LookupCode found a code that is not in the catalog")
	}

	kinds := constsOfType(t, "errors.go", "ErrorKind")
	for value, name := range kinds {
		c, ok := agentrt.LookupCode(value)
		if !ok || c.Kind != agentrt.ErrorKind(value) {
			t.Errorf("kind %s (%q) has no code of its own in the catalog (got %+v)", name, value, c)
		}
		if got := (&agentrt.Error{Kind: agentrt.ErrorKind(value)}).ErrorCode(); got != value {
			t.Errorf("an *Error of kind %s has code %q, want %q", name, got, value)
		}
	}
	for _, c := range codes {
		if _, ok := kinds[string(c.Kind)]; !ok {
			t.Errorf("code %q: kind %q is not an ErrorKind", c.Code, c.Kind)
		}
	}

	listed := map[string]bool{}
	_, groups := codeGroups(t, kinds)
	for group, cs := range groups {
		for _, code := range cs {
			listed[code] = true
			if !seen[code] {
				t.Errorf("codes.go's %s: %q is not in the catalog", group, code)
			}
		}
	}
	for value, name := range constsOfType(t, filepath.Join("model", "errors.go"), "ErrorCode") {
		listed[value] = true
		if c, ok := agentrt.LookupCode(value); !ok || c.Kind != agentrt.FailModel {
			t.Errorf("model.%s (%q) is not in the catalog as a model failure (got %+v)", name, value, c)
		}
	}
	for _, c := range codes {
		if !listed[c.Code] {
			t.Errorf("code %q is in the table but neither a constant of codes.go nor a code of package model", c.Code)
		}
	}
}

// docRow is a code's row in docs/errors.md.
func docRow(c agentrt.CodeInfo, kindName string) string {
	rec := "no"
	if c.Recoverable {
		rec = "yes"
	}
	return fmt.Sprintf("| `%s` | `%s` | %s | %s | %d | %d %s |", c.Code, kindName, c.Meaning, rec, c.Exit, c.HTTP, http.StatusText(c.HTTP))
}

// TestCodesDoc keeps docs/errors.md true to the catalog: every code has
// its row, under the heading of its group in codes.go, and says what the
// table says; the page lists no code the catalog lacks.
func TestCodesDoc(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("docs", "errors.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}     // code → its row
	sections := map[string]string{} // code → the heading above it
	heading := ""
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if h, ok := strings.CutPrefix(line, "## "); ok {
			heading = h
			continue
		}
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		code, _, _ := strings.Cut(strings.TrimPrefix(line, "| `"), "`")
		if _, dup := rows[code]; dup {
			t.Errorf("docs/errors.md lists %q twice", code)
		}
		rows[code], sections[code] = line, heading
	}

	kinds := constsOfType(t, "errors.go", "ErrorKind")
	groupOf := map[string]string{}
	names, groups := codeGroups(t, kinds)
	for group, cs := range groups {
		for _, code := range cs {
			groupOf[code] = group
		}
	}
	for _, c := range agentrt.Codes() {
		want := docRow(c, kinds[string(c.Kind)])
		got, ok := rows[c.Code]
		switch {
		case !ok:
			t.Errorf("docs/errors.md has no row for %q; add:\n%s", c.Code, want)
		case got != want:
			t.Errorf("docs/errors.md's row for %q disagrees with the catalog:\n got %s\nwant %s", c.Code, got, want)
		}
		group := groupOf[c.Code]
		if group == "" {
			group = "Model failures"
		}
		if ok && sections[c.Code] != group {
			t.Errorf("docs/errors.md lists %q under %q, want %q (its group in codes.go)", c.Code, sections[c.Code], group)
		}
		delete(rows, c.Code)
	}
	for code := range rows {
		t.Errorf("docs/errors.md lists %q, which is not in the catalog", code)
	}
	for _, name := range append(names, "Model failures") {
		if !strings.Contains(string(b), "\n## "+name+"\n") {
			t.Errorf("docs/errors.md has no section %q", name)
		}
	}
}

// exemptFromLiterals are files whose code literals are converted
// separately (they are being rewritten); drop an entry once its file uses
// the constants.
var exemptFromLiterals = map[string]bool{}

// TestCodesNoLiterals finds codes of the catalog written as string
// literals in the module's non-test code where a code is set or compared:
// Code: "busy", x.Code == "busy", ErrorCode() != "busy", code == "busy",
// case "busy" of a switch on a code.
func TestCodesNoLiterals(t *testing.T) {
	isCode := func(e ast.Expr) (string, bool) {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			return "", false
		}
		_, ok = agentrt.LookupCode(s)
		return s, ok
	}
	// holdsCode reports whether e reads an error code: x.Code,
	// x.ErrorCode(), or a variable named code.
	holdsCode := func(e ast.Expr) bool {
		switch e := e.(type) {
		case *ast.SelectorExpr:
			return e.Sel.Name == "Code"
		case *ast.CallExpr:
			s, ok := e.Fun.(*ast.SelectorExpr)
			return ok && s.Sel.Name == "ErrorCode"
		case *ast.Ident:
			return e.Name == "code"
		}
		return false
	}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") && path != ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || exemptFromLiterals[path] {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		report := func(n ast.Node, code string) {
			t.Errorf("%s: the code %q as a literal: use its constant (codes.go)", fset.Position(n.Pos()), code)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.KeyValueExpr:
				if k, ok := n.Key.(*ast.Ident); ok && k.Name == "Code" {
					if code, ok := isCode(n.Value); ok {
						report(n, code)
					}
				}
			case *ast.BinaryExpr:
				if n.Op != token.EQL && n.Op != token.NEQ {
					break
				}
				if code, ok := isCode(n.Y); ok && holdsCode(n.X) {
					report(n, code)
				}
				if code, ok := isCode(n.X); ok && holdsCode(n.Y) {
					report(n, code)
				}
			case *ast.SwitchStmt:
				if n.Tag == nil || !holdsCode(n.Tag) {
					break
				}
				for _, s := range n.Body.List {
					for _, e := range s.(*ast.CaseClause).List {
						if code, ok := isCode(e); ok {
							report(e, code)
						}
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCodesExitAgreesWithOutcome checks the catalog's exit code of every
// code that ends a run against DescribeOutcome, which the agentrt command
// exits by: a budget pauses the run, a cancellation cancels it, anything
// else fails it. (Codes of calls refused before a run starts exit 2 or 3:
// the CLI's tests check those.)
func TestCodesExitAgreesWithOutcome(t *testing.T) {
	for _, c := range agentrt.Codes() {
		if c.Kind == agentrt.FailInput || c.Kind == agentrt.FailState && c.Code != agentrt.CodeCrashLoop {
			continue
		}
		status := session.StatusFailed
		switch {
		case c.Kind == agentrt.FailLimit && c.Code != agentrt.CodeLimit:
			status = session.StatusPaused
		case c.Kind == agentrt.FailCanceled:
			status = session.StatusCanceled
		}
		res := &agentrt.Result{SessionID: "s1", Status: status, Reason: c.Code,
			Err: &session.Error{Code: c.Code, Message: c.Meaning, Recoverable: c.Recoverable}}
		if got := agentrt.DescribeOutcome(res, nil).ExitCode; got != c.Exit {
			t.Errorf("a run %s with %q exits %d; the catalog says %d", status, c.Code, got, c.Exit)
		}
	}
}
