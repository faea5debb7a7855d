package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"
)

// The two files of a configuration directory.
const (
	BotsFile  = "bots.yaml"
	UsersFile = "users.yaml"
)

// Load reads bots.yaml and users.yaml from dir, validates them and applies
// defaults. When the files are readable but invalid, the error is Errors
// listing every problem of both files; when a file is missing or
// unreadable, it is an I/O error wrapping the os error (errors.Is(err,
// fs.ErrNotExist) works).
func Load(dir string) (*Config, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("config dir %s: %w", dir, err)
	}
	// Read both files before parsing either, so a missing file is reported
	// as such rather than after a page of validation errors.
	botsData, err := os.ReadFile(filepath.Join(abs, BotsFile))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", BotsFile, err)
	}
	usersData, err := os.ReadFile(filepath.Join(abs, UsersFile))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", UsersFile, err)
	}
	return parse(abs, botsData, usersData)
}

// botsDoc is the top level of bots.yaml.
type botsDoc struct {
	Gateway Gateway `yaml:"gateway"`
	Bots    []Bot   `yaml:"bots"`
}

// parse builds a Config from the two files' content.
func parse(dir string, botsData, usersData []byte) (*Config, error) {
	cfg := &Config{Dir: dir}
	var bots botsDoc
	br := decodeFile(BotsFile, botsData, &bots)
	ur := decodeFile(UsersFile, usersData, &cfg.Users)
	if br.doc != nil {
		cfg.Gateway, cfg.Bots = bots.Gateway, bots.Bots
		applyBotsDefaults(cfg, br.doc)
		validateBots(br, cfg)
	}
	if ur.doc != nil {
		applyUsersDefaults(&cfg.Users)
		validateUsers(ur, &cfg.Users)
	}
	if errs := append(br.errs, ur.errs...); len(errs) > 0 {
		errs.sort()
		return nil, errs
	}
	return cfg, nil
}

// decodeFile parses one file into out. The returned report holds the
// file's problems so far; its doc is nil when nothing could be decoded, in
// which case out must not be validated further.
func decodeFile(file string, data []byte, out any) *report {
	r := &report{file: file}
	root, ok := parseYAML(r, data)
	if !ok {
		return r
	}
	checkShape(r, root, reflect.TypeOf(out).Elem())
	if slices.Contains(r.structural, "") {
		return r // the document as a whole is unusable
	}
	// Viper decodes the same bytes we parsed, rather than rereading the
	// file, so that lines and values describe one version of it even while
	// an editor is writing.
	v := viper.NewWithOptions(viper.KeyDelimiter("::"))
	v.SetConfigType("yaml")
	if err := v.ReadConfig(bytes.NewReader(data)); err != nil {
		if len(r.errs) == 0 { // otherwise the shape check has said why
			r.structuralf("", yamlLine(err), "%s", yamlMessage(err))
		}
		return r
	}
	err := v.Unmarshal(out, func(dc *mapstructure.DecoderConfig) {
		dc.TagName = "yaml"
		dc.ErrorUnused = true
		dc.WeaklyTypedInput = false
	})
	doc := &index{root: root}
	if err != nil && len(r.errs) == 0 {
		// The shape check is stricter than the decoder, so this is not
		// expected; report it rather than lose it.
		for _, e := range decodeErrors(err) {
			r.structuralf(e.Key, doc.line(e.Key), "%s", e.Message)
		}
	}
	r.doc = doc
	return r
}

// parseYAML parses data as exactly one YAML document whose top level is a
// mapping. Syntax errors and empty files are recorded in r.
func parseYAML(r *report, data []byte) (root *yaml.Node, ok bool) {
	if len(bytes.TrimSpace(data)) == 0 {
		r.structuralf("", 0, "file is empty")
		return nil, false
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			r.structuralf("", 0, "file has no settings (only comments)")
		} else {
			r.structuralf("", yamlLine(err), "%s", yamlMessage(err))
		}
		return nil, false
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		r.structuralf("", next.Line, "a second YAML document (---) is not allowed")
		return nil, false
	case !errors.Is(err, io.EOF):
		r.structuralf("", yamlLine(err), "%s", yamlMessage(err))
		return nil, false
	}
	root = &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if n := resolve(root); n == nil || n.Kind != yaml.MappingNode {
		r.structuralf("", root.Line, "the top level must be a mapping of keys")
		return nil, false
	}
	return root, true
}

// yamlLineRE finds the line number in a go-yaml error message.
var yamlLineRE = regexp.MustCompile(`line (\d+): `)

// yamlLine returns the line a go-yaml error names, or 0.
func yamlLine(err error) int {
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

// yamlMessage returns a go-yaml error without its "yaml:" and line
// prefixes, since Error carries the file and line.
func yamlMessage(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, "yaml: "); i >= 0 {
		msg = msg[i+len("yaml: "):]
	}
	msg = yamlLineRE.ReplaceAllString(msg, "")
	return "invalid YAML: " + strings.Join(strings.Fields(msg), " ")
}

// decodeErrors turns mapstructure's joined errors into key and message.
func decodeErrors(err error) []Error {
	var out []Error
	var walk func(error)
	walk = func(err error) {
		var de *mapstructure.DecodeError
		switch {
		case multi(err) != nil:
			for _, e := range multi(err) {
				walk(e)
			}
		case errors.As(err, &de):
			out = append(out, Error{Key: de.Name(), Message: fmt.Sprint(de.Unwrap())})
		default:
			out = append(out, Error{Message: err.Error()})
		}
	}
	walk(err)
	return out
}

// multi returns the errors joined in err, if it is a joined error.
func multi(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return nil
}
