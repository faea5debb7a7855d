package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
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

// MaxFileSize is the size of the largest configuration file Load reads
// (SPEC §12): a bigger one is refused unread. Parsing costs far more
// than the file's size in time and memory (about two seconds and 500 MB
// for a file of this size of valid bots), and a real configuration is a
// few kilobytes.
const MaxFileSize = 1 << 20

// maxMappingKeys bounds the keys of one YAML mapping. The YAML decoder
// compares every key of a mapping with every other, so a mapping of
// 100,000 keys (a megabyte of them) would take minutes; Switchboard's
// largest mapping has about fifteen.
const maxMappingKeys = 1000

// Load reads bots.yaml and users.yaml from dir, validates them and applies
// defaults. When the files are readable but invalid (or larger than
// MaxFileSize), the error is Errors listing every problem of both files;
// when a file is missing or unreadable, it is an I/O error wrapping the os
// error (errors.Is(err, fs.ErrNotExist) works). Problems that are only
// warnings do not fail the load: they are in Config.Warnings. Options add
// checks that need knowledge config does not have (WithBrainCheck).
func Load(dir string, opts ...Option) (*Config, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("config dir %s: %w", dir, err)
	}
	// Read both files before parsing either, so a missing file is reported
	// as such rather than after a page of validation errors.
	botsData, tooBig, err := readFile(abs, BotsFile)
	if err != nil {
		return nil, err
	}
	usersData, usersTooBig, err := readFile(abs, UsersFile)
	if err != nil {
		return nil, err
	}
	if tooBig = append(tooBig, usersTooBig...); len(tooBig) > 0 {
		return nil, tooBig
	}
	return parse(abs, botsData, usersData, newOptions(opts))
}

// LoadContext is Load, returning ctx's error as soon as ctx ends. A load
// still running then is left to finish on its own: parsing cannot be
// interrupted, but MaxFileSize bounds it, and its result is dropped.
func LoadContext(ctx context.Context, dir string, opts ...Option) (*Config, error) {
	if err := ctx.Err(); err != nil { // select below would pick at random
		return nil, fmt.Errorf("load %s: %w", dir, err)
	}
	type result struct {
		cfg *Config
		err error
	}
	done := make(chan result, 1)
	go func() {
		cfg, err := Load(dir, opts...)
		done <- result{cfg, err}
	}()
	select {
	case r := <-done:
		return r.cfg, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("load %s: %w", dir, ctx.Err())
	}
}

// readFile reads one configuration file of dir. A file larger than
// MaxFileSize is not read: the problem is returned as Errors.
func readFile(dir, name string) ([]byte, Errors, error) {
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", name, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, Errors{{File: name, Message: "not a regular file"}}, nil
	}
	tooBig := func(size string) Errors {
		return Errors{{File: name, Message: fmt.Sprintf("the file is %s, over the limit of 1 MiB (%d bytes); it was not read", size, MaxFileSize)}}
	}
	if fi.Size() > MaxFileSize {
		return nil, tooBig(fmt.Sprintf("%d bytes", fi.Size())), nil
	}
	// The file may grow after Stat: read one byte past the limit at most.
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(data) > MaxFileSize {
		return nil, tooBig(fmt.Sprintf("at least %d bytes", len(data))), nil
	}
	return data, nil, nil
}

// botsDoc is the top level of bots.yaml.
type botsDoc struct {
	Gateway Gateway `yaml:"gateway"`
	Bots    []Bot   `yaml:"bots"`
	Shared  Shared  `yaml:"shared"`
}

// parse builds a Config from the two files' content.
func parse(dir string, botsData, usersData []byte, o options) (*Config, error) {
	cfg := &Config{Dir: dir}
	var bots botsDoc
	br := decodeFile(BotsFile, botsData, &bots)
	ur := decodeFile(UsersFile, usersData, &cfg.Users)
	if br.doc != nil {
		cfg.Gateway, cfg.Bots, cfg.Shared = bots.Gateway, bots.Bots, bots.Shared
		applyBotsDefaults(cfg, br.doc)
		validateBots(br, cfg, o)
	}
	if ur.doc != nil {
		applyUsersDefaults(&cfg.Users)
		validateUsers(ur, &cfg.Users)
	}
	all := append(br.errs, ur.errs...)
	all.sort()
	errs, warnings := all.split()
	if len(errs) > 0 {
		return nil, all
	}
	cfg.Warnings = warnings
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
	if r.structural[""] {
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
		// Viper's own hooks, with durations of days.
		dc.DecodeHook = mapstructure.ComposeDecodeHookFunc(durationHook, argTextHook, mapstructure.StringToSliceHookFunc(","))
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
	if n := bigMapping(&doc); n != nil {
		r.structuralf("", n.Line, "a mapping of %d keys; at most %d are allowed in one mapping", len(n.Content)/2, maxMappingKeys)
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

// bigMapping returns the first mapping under n with more than
// maxMappingKeys keys, or nil. Aliases are not followed: what they name
// is walked where it is written.
func bigMapping(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.MappingNode && len(n.Content)/2 > maxMappingKeys {
		return n
	}
	for _, c := range n.Content {
		if big := bigMapping(c); big != nil {
			return big
		}
	}
	return nil
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
