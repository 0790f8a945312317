package stepfnlocal

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// get reads a path ($, $.a.b, $$.Execution.Input, …) from the state's
// input or the context object.
func get(path string, input any, ctxObj map[string]any) (any, bool) {
	var cur any
	switch {
	case path == "$":
		return input, true
	case path == "$$":
		return ctxObj, true
	case strings.HasPrefix(path, "$$."):
		cur, path = ctxObj, path[3:]
	case strings.HasPrefix(path, "$."):
		cur, path = input, path[2:]
	default:
		return nil, false
	}
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// expr evaluates a ".$" field's value: a path, or an intrinsic call.
func expr(e string, input any, ctxObj map[string]any) (any, *Failure) {
	e = strings.TrimSpace(e)
	if strings.HasPrefix(e, "States.") {
		open := strings.IndexByte(e, '(')
		if open < 0 || !strings.HasSuffix(e, ")") {
			return nil, runtimeError("malformed intrinsic %s", e)
		}
		args, err := splitArgs(e[open+1 : len(e)-1])
		if err != nil {
			return nil, err
		}
		vals := make([]any, len(args))
		for i, a := range args {
			switch {
			case strings.HasPrefix(a, "'"):
				vals[i] = strings.ReplaceAll(a[1:len(a)-1], `\'`, `'`)
			case a == "null":
				vals[i] = nil
			default:
				if f, perr := strconv.ParseFloat(a, 64); perr == nil {
					vals[i] = f
					continue
				}
				if vals[i], err = expr(a, input, ctxObj); err != nil {
					return nil, err
				}
			}
		}
		return intrinsic(e[:open], vals)
	}
	v, ok := get(e, input, ctxObj)
	if !ok {
		return nil, runtimeError("the JSONPath %s could not be found in the input", e)
	}
	return v, nil
}

// splitArgs splits an intrinsic's arguments at its top-level commas.
func splitArgs(s string) ([]string, *Failure) {
	var out []string
	depth, quoted, from := 0, false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && quoted:
			i++
		case c == '\'':
			quoted = !quoted
		case quoted:
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ',' && depth == 0:
			out = append(out, strings.TrimSpace(s[from:i]))
			from = i + 1
		}
	}
	if quoted || depth != 0 {
		return nil, runtimeError("malformed intrinsic arguments %s", s)
	}
	if rest := strings.TrimSpace(s[from:]); rest != "" {
		out = append(out, rest)
	}
	return out, nil
}

func intrinsic(name string, args []any) (any, *Failure) {
	bad := func(why string) (any, *Failure) {
		return nil, &Failure{Error: "States.IntrinsicFailure", Cause: name + ": " + why}
	}
	switch name {
	case "States.Format":
		if len(args) == 0 {
			return bad("no template")
		}
		tpl, ok := args[0].(string)
		if !ok {
			return bad("the template is not a string")
		}
		var b strings.Builder
		n := 1
		for {
			i := strings.Index(tpl, "{}")
			if i < 0 {
				b.WriteString(tpl)
				break
			}
			if n >= len(args) {
				return bad("more {} than arguments")
			}
			b.WriteString(tpl[:i])
			switch v := args[n].(type) {
			case string:
				b.WriteString(v)
			case float64:
				b.WriteString(strconv.FormatFloat(v, 'f', -1, 64))
			case bool, nil:
				fmt.Fprint(&b, v)
			default:
				return bad("arguments must be strings, numbers, booleans or null")
			}
			tpl, n = tpl[i+2:], n+1
		}
		if n != len(args) {
			return bad("more arguments than {}")
		}
		return b.String(), nil
	case "States.Hash":
		if len(args) != 2 {
			return bad("want (data, algorithm)")
		}
		data, ok1 := args[0].(string)
		alg, ok2 := args[1].(string)
		if !ok1 || !ok2 {
			return bad("want (string, string)")
		}
		var h hash.Hash
		switch alg {
		case "MD5":
			h = md5.New()
		case "SHA-1":
			h = sha1.New()
		case "SHA-256":
			h = sha256.New()
		case "SHA-512":
			h = sha512.New()
		default:
			return bad("unsupported algorithm " + alg)
		}
		h.Write([]byte(data))
		return hex.EncodeToString(h.Sum(nil)), nil
	case "States.MathAdd":
		if len(args) != 2 {
			return bad("want two numbers")
		}
		a, ok1 := args[0].(float64)
		b, ok2 := args[1].(float64)
		if !ok1 || !ok2 {
			return bad("want two numbers")
		}
		return a + b, nil
	case "States.JsonToString":
		if len(args) != 1 {
			return bad("want one argument")
		}
		b, err := json.Marshal(args[0])
		if err != nil {
			return bad(err.Error())
		}
		return string(b), nil
	}
	return bad("not supported here")
}
