// Renders a Helm chart's templates the way `helm template` does, for the
// chart tests on machines without Helm (Debian 12 does not package it):
// Go's text/template, which Helm uses, with the Helm and Sprig functions
// the chart calls implemented to their documented behaviour. A function
// the chart uses that is missing here fails the parse, so the chart cannot
// quietly outgrow this renderer.
//
// Usage: go run helm_render.go CHART_DIR CONTEXT_JSON
// CONTEXT_JSON: {"Values": {...}, "Chart": {...}, "Release": {...}}, the
// values already merged. Prints every non-empty template, each after a
// "# Source: <file>" line and "---".
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/template"
)

func indent(n int, s string) string {
	pad := strings.Repeat(" ", n)
	return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
}

// scalar: a value on one line; strings double-quoted (JSON's quoting is
// YAML's), integral numbers without a fraction, as Helm prints them.
func scalar(v interface{}) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case float64:
		if x == float64(int64(x)) {
			return fmt.Sprintf("%d", int64(x))
		}
		return fmt.Sprint(x)
	case map[string]interface{}:
		return "{}"
	case []interface{}:
		return "[]"
	}
	out, _ := json.Marshal(v)
	return string(out)
}

func nested(v interface{}) bool {
	switch x := v.(type) {
	case map[string]interface{}:
		return len(x) > 0
	case []interface{}:
		return len(x) > 0
	}
	return false
}

// toYaml: block YAML, as Helm's toYaml writes it (keys sorted).
func toYaml(v interface{}) string {
	var lines []string
	switch x := v.(type) {
	case map[string]interface{}:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			key, _ := json.Marshal(k)
			if nested(x[k]) {
				lines = append(lines, string(key)+":", indent(2, toYaml(x[k])))
			} else {
				lines = append(lines, string(key)+": "+scalar(x[k]))
			}
		}
	case []interface{}:
		for _, item := range x {
			if nested(item) {
				lines = append(lines, "-", indent(2, toYaml(item)))
			} else {
				lines = append(lines, "- "+scalar(item))
			}
		}
	default:
		return scalar(v)
	}
	if len(lines) == 0 {
		return scalar(v)
	}
	return strings.Join(lines, "\n")
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: helm_render CHART_DIR CONTEXT_JSON")
		os.Exit(2)
	}
	raw, err := os.ReadFile(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var ctx map[string]interface{}
	if err := json.Unmarshal(raw, &ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	root := template.New("chart").Option("missingkey=zero")
	funcs := template.FuncMap{
		"include": func(name string, data interface{}) (string, error) {
			var b bytes.Buffer
			err := root.ExecuteTemplate(&b, name, data)
			return b.String(), err
		},
		"toYaml":     toYaml,
		"indent":     indent,
		"nindent":    func(n int, s string) string { return "\n" + indent(n, s) },
		"quote":      func(v interface{}) string { return fmt.Sprintf("%q", fmt.Sprint(v)) },
		"lower":      strings.ToLower,
		"contains":   func(sub, s string) bool { return strings.Contains(s, sub) },
		"trimSuffix": func(suffix, s string) string { return strings.TrimSuffix(s, suffix) },
		"trunc": func(n int, s string) string {
			if len(s) > n {
				return s[:n]
			}
			return s
		},
		"b64enc": func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) },
		"sha256sum": func(s string) string {
			return fmt.Sprintf("%x", sha256.Sum256([]byte(s)))
		},
		"list": func(xs ...interface{}) []interface{} { return xs },
		"has": func(needle interface{}, xs []interface{}) bool {
			for _, x := range xs {
				if x == needle {
					return true
				}
			}
			return false
		},
		"fail": func(msg string) (string, error) { return "", errors.New(msg) },
	}
	root.Funcs(funcs)
	dir := filepath.Join(os.Args[1], "templates")
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	sort.Strings(files)
	var rendered []string
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if _, err := root.New(filepath.Base(f)).Parse(string(text)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if !strings.HasPrefix(filepath.Base(f), "_") {
			rendered = append(rendered, filepath.Base(f))
		}
	}
	for _, name := range rendered {
		var b bytes.Buffer
		if err := root.ExecuteTemplate(&b, name, ctx); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		out := strings.ReplaceAll(b.String(), "<no value>", "")
		if strings.TrimSpace(out) == "" {
			continue
		}
		fmt.Printf("---\n# Source: queryflux/templates/%s\n%s\n", name, out)
	}
}
