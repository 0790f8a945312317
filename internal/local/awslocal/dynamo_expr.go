package awslocal

import "strings"

// topLevelRemoves returns the top-level attribute paths (no "." or "[")
// named in REMOVE clauses of an update expression.
//
// minidyn applies "REMOVE a.b" and "REMOVE l[0]" (it edits the nested value
// in place) but silently ignores "REMOVE a": it deletes the name from its
// evaluation environment and then only writes the names that remain back
// onto the item. For the platform that bug is dangerous rather than
// cosmetic: removing a sparse GSI key would leave the item in the index
// locally and not in AWS (the sparse sweeper index depends on it). The
// DynamoDB wrapper completes such updates itself (removeAttributes).
func topLevelRemoves(expr string) []string {
	var out []string
	clauses := splitClauses(expr)
	for _, c := range clauses {
		if c.keyword != "REMOVE" {
			continue
		}
		for _, p := range splitTopLevelCommas(c.body) {
			p = strings.TrimSpace(p)
			if p != "" && !strings.ContainsAny(p, ".[") {
				out = append(out, p)
			}
		}
	}
	return out
}

type updateClause struct {
	keyword string // SET, REMOVE, ADD or DELETE
	body    string
}

// splitClauses splits an update expression at its clause keywords. A
// keyword only counts as one when it is a whole word that is not a
// placeholder ("#remove", ":set") or a path segment ("a.delete"); reserved
// words cannot appear bare as attribute names, so that is unambiguous.
func splitClauses(expr string) []updateClause {
	var out []updateClause
	cur := -1
	start := 0
	for i := 0; i < len(expr); {
		if !isIdentByte(expr[i]) {
			i++
			continue
		}
		j := i
		for j < len(expr) && isIdentByte(expr[j]) {
			j++
		}
		word := strings.ToUpper(expr[i:j])
		prev := byte(' ')
		if i > 0 {
			prev = expr[i-1]
		}
		if t := strings.TrimRight(expr[:i], " \t\r\n"); t != "" && t[len(t)-1] == '.' {
			prev = '.'
		}
		switch word {
		case "SET", "REMOVE", "ADD", "DELETE":
			if prev != '#' && prev != ':' && prev != '.' {
				if cur >= 0 {
					out[cur].body = expr[start:i]
				}
				out = append(out, updateClause{keyword: word})
				cur = len(out) - 1
				start = j
			}
		}
		i = j
	}
	if cur >= 0 {
		out[cur].body = expr[start:]
	}
	return out
}

func splitTopLevelCommas(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '[':
			depth++
		case ')', ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
