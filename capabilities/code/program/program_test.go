package program_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/capabilities/code/program"
)

func TestOnlyErasableTypeScript(t *testing.T) {
	for src, want := range map[string]string{
		"const a = 1\nenum Color { Red }":                             "SyntaxError: TypeScript enum declarations are not erasable syntax (only type annotations can be stripped; write plain JavaScript instead) (line 2, column 1)",
		"  namespace NS { export const x = 1 }":                       "SyntaxError: TypeScript namespace blocks are not erasable syntax (only type annotations can be stripped; write plain JavaScript instead) (line 1, column 3)",
		"class A {\n  constructor(public x: number, y: string) {}\n}": "SyntaxError: TypeScript constructor parameter properties are not erasable syntax (only type annotations can be stripped; write plain JavaScript instead) (line 2, column 15)",
	} {
		_, err := program.Transform(src, 0)
		require.Error(t, err, src)
		assert.Equal(t, want, err.Error())
	}
	for _, ok := range []string{
		"declare enum E { A }\nconst s = 'enum X { }'; // enum Y {}\nreturn s",
		"type T = { a: string }; interface I { b?: number }; const v = {a: 'x'} satisfies T; return v as unknown as I",
		"class B { constructor(x: number) { this.x = x } x: number }\nreturn new B(1).x",
		"const enumValue = 3; const module = {x: 1}; return enumValue + module.x",
	} {
		_, err := program.Transform(ok, 0)
		assert.NoError(t, err, ok)
	}
}

func TestDeepNestingIsRefusedBeforeAnyParser(t *testing.T) {
	for _, src := range []string{
		"return " + strings.Repeat("[", 300000) + strings.Repeat("]", 300000),
		"return " + strings.Repeat("(", 5000) + "1" + strings.Repeat(")", 5000),
		"const f = () => " + strings.Repeat("{", 2000) + strings.Repeat("}", 2000),
	} {
		_, err := program.Transform(src, 1000)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "nests brackets more than 1000 levels deep (line 1, column")
	}
	for _, src := range []string{
		"const s = '" + strings.Repeat("[", 5000) + "'; return s.length",
		"// " + strings.Repeat("(", 5000) + "\nreturn 1",
		"return " + strings.Repeat("[", 900) + strings.Repeat("]", 900),
	} {
		_, err := program.Transform(src, 1000)
		assert.NoError(t, err)
	}
}

// BenchmarkTransform is esbuild's TypeScript transform of a small program.
func BenchmarkTransform(b *testing.B) {
	src := `const xs: number[] = [1, 2, 3]; interface P { a: string }
for (const x of xs) { await tools.echo({text: String(x)} as any) } return xs.length`
	for b.Loop() {
		if _, err := program.Transform(src, 1000); err != nil {
			b.Fatal(err)
		}
	}
}
