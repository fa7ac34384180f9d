package jsrt

import "fmt"

// DepthError is a program nested deeper than the bound.
type DepthError struct {
	// Max is the bound; Line and Column where it was passed (1-based).
	Max, Line, Column int
}

// Error implements error.
func (e *DepthError) Error() string {
	return fmt.Sprintf("SyntaxError: the program nests brackets more than %d levels deep (line %d, column %d)", e.Max, e.Line, e.Column)
}

// CheckDepth reports a *DepthError when src nests (), [] and {} (template
// substitutions included) more than max levels deep; max ≤ 0 is no bound.
// lineOffset is subtracted from reported lines (a wrapper's header).
// Strings, comments and regular expression literals are skipped roughly:
// the scan is a guard, not a parser, and errs towards counting.
func CheckDepth(src string, max, lineOffset int) error {
	if max <= 0 {
		return nil
	}
	depth, line, col := 0, 1, 0
	var quote byte
	for i := 0; i < len(src); i++ {
		c := src[i]
		col++
		if c == '\n' {
			line, col = line+1, 0
		}
		if quote != 0 {
			switch {
			case c == '\\':
				i++
				col++
			case c == quote:
				quote = 0
			case quote == '`' && c == '$' && i+1 < len(src) && src[i+1] == '{':
				// A substitution nests like a block; its end is a '}'.
				quote = 0
				depth++
				i++
				col++
			}
			continue
		}
		switch c {
		case '"', '\'', '`':
			quote = c
		case '/':
			if i+1 < len(src) && src[i+1] == '/' {
				for i < len(src) && src[i] != '\n' {
					i++
				}
				line, col = line+1, 0
			} else if i+1 < len(src) && src[i+1] == '*' {
				for i += 2; i+1 < len(src) && !(src[i] == '*' && src[i+1] == '/'); i++ {
					if src[i] == '\n' {
						line, col = line+1, 0
					}
				}
				i++
			}
		case '(', '[', '{':
			depth++
			if depth > max {
				return &DepthError{Max: max, Line: line - lineOffset, Column: col}
			}
		case ')', ']', '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}
