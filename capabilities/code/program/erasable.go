package program

import "fmt"

// token is an identifier or a punctuation byte of the program, with its
// 1-based line and column.
type token struct {
	text      string
	line, col int
}

// nonErasable finds the first TypeScript construct that is not erasable
// syntax — one that generates code, so stripping types cannot remove it:
// enum declarations, namespace / module blocks (both unless declare'd) and
// constructor parameter properties. It returns a SyntaxError naming line
// and column, or nil.
func nonErasable(src string) error {
	toks := scan(src)
	for i, t := range toks {
		prevDeclare := i > 0 && toks[i-1].text == "declare" || i > 1 && toks[i-1].text == "const" && toks[i-2].text == "declare"
		next := func(k int) string {
			if i+k < len(toks) {
				return toks[i+k].text
			}
			return ""
		}
		switch t.text {
		case "enum":
			if isIdent(next(1)) && next(2) == "{" && !prevDeclare {
				return notErasable("enum declarations", t)
			}
		case "namespace", "module":
			if isIdent(next(1)) && (next(2) == "{" || next(2) == ".") && !prevDeclare && (i == 0 || !isIdent(toks[i-1].text) || toks[i-1].text == "export") {
				return notErasable(t.text+" blocks", t)
			}
		case "constructor":
			if next(1) != "(" {
				continue
			}
			depth, start := 0, true
		params:
			for j := i + 1; j < len(toks); j++ {
				switch toks[j].text {
				case "(", "{", "[":
					depth++
				case ")", "}", "]":
					depth--
				}
				if depth == 0 {
					break params
				}
				if depth == 1 && start {
					switch toks[j].text {
					case "public", "private", "protected", "readonly", "override":
						if j+1 < len(toks) && isIdent(toks[j+1].text) {
							return notErasable("constructor parameter properties", toks[j])
						}
					}
				}
				start = depth == 1 && (toks[j].text == "," || toks[j].text == "(")
			}
		}
	}
	return nil
}

func notErasable(what string, t token) error {
	return fmt.Errorf("SyntaxError: TypeScript %s are not erasable syntax (only type annotations can be stripped; write plain JavaScript instead) (line %d, column %d)",
		what, t.line, t.col)
}

// isIdent reports whether s is an identifier token.
func isIdent(s string) bool { return s != "" && identByte(s[0]) && (s[0] < '0' || s[0] > '9') }

func identByte(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// scan splits src into identifiers and punctuation, skipping comments,
// strings and template literals.
func scan(src string) []token {
	var toks []token
	line, col := 1, 1
	adv := func(n int, i *int) {
		for k := 0; k < n && *i < len(src); k++ {
			if src[*i] == '\n' {
				line, col = line+1, 1
			} else {
				col++
			}
			*i++
		}
	}
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				adv(1, &i)
			}
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			adv(2, &i)
			for i < len(src) && !(src[i] == '*' && i+1 < len(src) && src[i+1] == '/') {
				adv(1, &i)
			}
			adv(2, &i)
		case c == '"' || c == '\'' || c == '`':
			adv(1, &i)
			for i < len(src) && src[i] != c {
				if src[i] == '\\' {
					adv(1, &i)
				}
				adv(1, &i)
			}
			adv(1, &i)
		case identByte(c):
			l, cl, start := line, col, i
			for i < len(src) && identByte(src[i]) {
				adv(1, &i)
			}
			toks = append(toks, token{src[start:i], l, cl})
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			adv(1, &i)
		default:
			toks = append(toks, token{string(c), line, col})
			adv(1, &i)
		}
	}
	return toks
}
