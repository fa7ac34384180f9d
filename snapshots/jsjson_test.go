package snapshots

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStringifyJS(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"index keys first", `{"b":1,"1":2}`, `{"1":2,"b":1}`},
		{"index key order", `{"b":1,"10":2,"2":3,"01":4,"4294967295":5,"4294967294":6,"-1":7,"0":8,"1.5":9}`,
			`{"0":8,"2":3,"10":2,"4294967294":6,"b":1,"01":4,"4294967295":5,"-1":7,"1.5":9}`},
		{"duplicate keys", `{"a":1,"b":2,"a":3}`, `{"a":3,"b":2}`},
		{"proto key", `{"__proto__":{"x":1},"y":2}`, `{"__proto__":{"x":1},"y":2}`},
		{"nested", `{"z":[{"2":1,"1":2}],"a":{}}`, `{"z":[{"1":2,"2":1}],"a":{}}`},
		{"whitespace", " \t\r\n{ \"a\" : [ 1 , 2 ] , \"b\" : [ ] }\n ", `{"a":[1,2],"b":[]}`},
		{"literals", `[true,false,null]`, `[true,false,null]`},
		{"numbers",
			`[1e21,1e-7,5e-324,1.7976931348623157e+308,-0,100,1.5,17.45639600000004,1.2345678901234568e20,0.000001,1e20,123e-20,2.5E+3,-0.0,1E400,-1e400,1e-400,0.1,-12.5e-10,123456789012345678901234567890]`,
			`[1e+21,1e-7,5e-324,1.7976931348623157e+308,0,100,1.5,17.45639600000004,123456789012345680000,0.000001,100000000000000000000,1.23e-18,2500,0,null,null,0,0.1,-1.25e-9,1.2345678901234568e+29]`},
		{"escapes", `"\u0000\u001F\b\t\n\f\r\"\\\/<>&\u00e9\u007f\u2028\u2029"`,
			`"\u0000\u001f\b\t\n\f\r\"\\/<>&é` + "\x7f\u2028\u2029" + `"`},
		{"raw non-ascii", "\"é😀\u2028\"", "\"é😀\u2028\""},
		{"lone high surrogate", `"\ud800"`, `"\ud800"`},
		{"lone low surrogate", `"x\uDC00y"`, `"x\udc00y"`},
		{"surrogate pair", `"\uD83D\uDE00"`, `"😀"`},
		{"high then non-low", `"\ud83d\u0041"`, `"\ud83dA"`},
		{"high then high", `"\ud83d\ud83d\ude00"`, `"\ud83d😀"`},
		{"escaped key", `{"a\u0001\/":1}`, `{"a\u0001/":1}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := StringifyJS([]byte(c.in))
			require.NoError(t, err)
			require.Equal(t, c.want, string(got))
		})
	}
}

func TestJSNumberFormatting(t *testing.T) {
	point1, point2 := 0.1, 0.2 // variables: constant arithmetic would be exact
	cases := map[float64]string{
		point1 + point2:         "0.30000000000000004",
		math.Copysign(0, -1):    "0",
		1e21:                    "1e+21",
		1e-7:                    "1e-7",
		1e-6:                    "0.000001",
		5e-324:                  "5e-324",
		math.MaxFloat64:         "1.7976931348623157e+308",
		100:                     "100",
		-1.5:                    "-1.5",
		123456789012345678:      "123456789012345680",
		math.Inf(1):             "null",
		math.NaN():              "null",
		1.2345678901234568e20:   "123456789012345680000",
		999999999999999900000.0: "999999999999999900000",
	}
	for f, want := range cases {
		require.Equal(t, want, NewJSNumber(f).String(), "%v", f)
	}
}

func TestParseJSErrors(t *testing.T) {
	for _, in := range []string{
		``, ` `, `{"a":1,}`, `[1,]`, `01`, `1.`, `.5`, `+1`, `-`, `1e`, `1e+`, "\"\x01\"", `'a'`,
		`{"a" 1}`, `{a:1}`, `tru`, `nul`, `"abc`, `"\x"`, `"\u12"`, `"\u12g4"`, `1 2`, `NaN`,
		`Infinity`, `[1]x`, `{"a":1`, `[1`, `"\`,
	} {
		_, err := ParseJS([]byte(in))
		require.Error(t, err, "input %q", in)
	}
}

func TestParseJSInvalidUTF8(t *testing.T) {
	got, err := StringifyJS([]byte{'"', 0xE2, 0x82, '"'})
	require.NoError(t, err)
	require.Equal(t, "\"\uFFFD\"", string(got)) // one maximal subpart
	got, err = StringifyJS([]byte{'"', 0xFF, 'a', 0xED, 0xA0, 0x80, '"'})
	require.NoError(t, err)
	require.Equal(t, "\"\uFFFDa\uFFFD\uFFFD\uFFFD\"", string(got))
}

func TestJSValueObjectAPI(t *testing.T) {
	o := NewJSObject()
	o.Set("b", NewJSNumber(1))
	o.Set("1", NewJSString("one"))
	o.Set("a", NewJSBool(true))
	o.Set("0", NewJSNull())
	o.Set("b", NewJSNumber(2)) // keeps its position
	o.Set("10", NewJSArray(NewJSNumber(1)))
	require.Equal(t, []string{"0", "1", "10", "b", "a"}, o.Keys())
	require.Equal(t, `{"0":null,"1":"one","10":[1],"b":2,"a":true}`, o.String())

	v, ok := o.Get("1")
	require.True(t, ok)
	s, ok := v.StringValue()
	require.True(t, ok)
	require.Equal(t, "one", s)
	_, ok = o.Get("missing")
	require.False(t, ok)
	require.True(t, o.Has("a"))
	require.True(t, o.Delete("a"))
	require.False(t, o.Delete("a"))
	require.Equal(t, `{"0":null,"1":"one","10":[1],"b":2}`, o.String())

	arr, _ := o.Get("10")
	arr.Append(NewJSString("x"))
	arr.Items()[0] = NewJSNumber(7)
	require.Equal(t, `[7,"x"]`, arr.String())
	require.Equal(t, JSArray, arr.Kind())

	var nilValue *JSValue
	require.True(t, nilValue.IsNull())
	require.False(t, nilValue.Has("x"))
	require.Nil(t, nilValue.Keys())
	require.Panics(t, func() { NewJSString("x").Set("a", nil) })
}

func TestMapStringsLeavesKeys(t *testing.T) {
	v, err := ParseJS([]byte(`{"k":"v","a":["x",{"k":"y"}],"n":1}`))
	require.NoError(t, err)
	v.MapStrings(strings.ToUpper)
	require.Equal(t, `{"k":"V","a":["X",{"k":"Y"}],"n":1}`, v.String())
}

// TestStringifyJSAgainstNode compares StringifyJS with Node's
// JSON.stringify(JSON.parse(…)) on the upstream corpus and on random
// numbers, when node is installed.
func TestStringifyJSAgainstNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed; skipping the differential check against JavaScript")
	}
	inputs := []string{`{"b":1,"1":2,"a":{"3":1,"x":2,"0":3}}`, `"\ud800\udc00\udfff"`, `[1e21,1e-7,-0]`}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		f := math.Float64frombits(rng.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		inputs = append(inputs, strconv.FormatFloat(f, 'g', -1, 64))
		inputs = append(inputs, strconv.FormatFloat(float64(rng.IntN(1e9))/math.Pow(10, float64(rng.IntN(30))), 'g', -1, 64))
	}
	if root := upstreamRoot(t, false); root != "" {
		files, _ := filepath.Glob(filepath.Join(root, "*", "*", "*.jsonl"))
		for _, f := range files {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			for _, line := range strings.Split(string(data), "\n") {
				if strings.TrimSpace(line) != "" {
					inputs = append(inputs, line)
				}
			}
		}
	}
	payload, err := json.Marshal(inputs)
	require.NoError(t, err)
	cmd := exec.Command(node, "-e", `let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{`+
		`process.stdout.write(JSON.stringify(JSON.parse(s).map(x=>JSON.stringify(JSON.parse(x)))))})`)
	cmd.Stdin = strings.NewReader(string(payload))
	out, err := cmd.Output()
	require.NoError(t, err)
	var want []string
	require.NoError(t, json.Unmarshal(out, &want))
	require.Len(t, want, len(inputs))
	for i, in := range inputs {
		got, err := StringifyJS([]byte(in))
		require.NoError(t, err)
		require.Equal(t, want[i], string(got), "input %.200s", in)
	}
}
