package dataset

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// authorField is a descriptive field of the card, which its author owns: a string or a
// list of strings, each of which the Hub also takes in the other form.
type authorField struct {
	key  string
	str  func(*Card) *string
	list func(*Card) *[]string
}

var authorFields = []authorField{
	{key: "license", str: func(c *Card) *string { return &c.License }},
	{key: "pretty_name", str: func(c *Card) *string { return &c.PrettyName }},
	{key: "task_categories", list: func(c *Card) *[]string { return &c.TaskCategories }},
	{key: "language", list: func(c *Card) *[]string { return &c.Language }},
	{key: "tags", list: func(c *Card) *[]string { return &c.Tags }},
}

// decode sets the field of c from a YAML value: a list given for a string is joined with
// ", ", a string given for a list is a list of one.
func (f authorField) decode(c *Card, n *yaml.Node) error {
	values, err := yamlStrings(n)
	if err != nil {
		return fmt.Errorf("%s: %w", f.key, err)
	}
	if f.str != nil {
		*f.str(c) = strings.Join(values, ", ")
	} else {
		*f.list(c) = values
	}
	return nil
}

// equal says whether a YAML value decodes to the field's value in c.
func (f authorField) equal(c *Card, n *yaml.Node) bool {
	var scratch Card
	if f.decode(&scratch, n) != nil {
		return false
	}
	if f.str != nil {
		return *f.str(&scratch) == *f.str(c)
	}
	return slices.Equal(*f.list(&scratch), *f.list(c))
}

// yamlStrings reads a scalar, a list of scalars or null.
func yamlStrings(n *yaml.Node) ([]string, error) {
	switch n.Kind {
	case yaml.AliasNode:
		return yamlStrings(n.Alias)
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return nil, nil
		}
		return []string{n.Value}, nil
	case yaml.SequenceNode:
		out := make([]string, 0, len(n.Content))
		for _, e := range n.Content {
			if e.Kind == yaml.AliasNode {
				e = e.Alias
			}
			if e.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: want a list of strings", e.Line)
			}
			out = append(out, e.Value)
		}
		return out, nil
	}
	return nil, fmt.Errorf("line %d: want a string or a list of strings", n.Line)
}

// cardKeys are the YAML keys of the Card's fields.
var cardKeys = func() map[string]bool {
	keys := map[string]bool{}
	t := reflect.TypeFor[Card]()
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); name != "" && name != "-" {
			keys[name] = true
		}
	}
	return keys
}()

// metaMapping returns the mapping of a front matter document, an empty one for an empty
// document.
func metaMapping(doc *yaml.Node) (*yaml.Node, error) {
	if doc.Kind == 0 {
		*doc = yaml.Node{Kind: yaml.DocumentNode}
	}
	if doc.Kind != yaml.DocumentNode {
		return nil, errors.New("not a YAML document")
	}
	if len(doc.Content) == 0 || (doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].ShortTag() == "!!null") {
		doc.Content = []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: the metadata is not a mapping of fields", m.Line)
	}
	return m, nil
}

// decode sets c's fields from the metadata's mapping. A field TapeBox owns must have the
// shape it writes; a field twice is an error.
func (c *Card) decode(m *yaml.Node) error {
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if seen[k.Value] {
			return fmt.Errorf("line %d: %s is given twice", k.Line, k.Value)
		}
		seen[k.Value] = true
		if j := slices.IndexFunc(authorFields, func(f authorField) bool { return f.key == k.Value }); j >= 0 {
			if err := authorFields[j].decode(c, v); err != nil {
				return err
			}
			continue
		}
		var dst any
		switch k.Value {
		case "size_categories":
			dst = &c.SizeCategories
		case "configs":
			dst = &c.Configs
		case "dataset_info":
			dst = &c.DatasetInfo
		default:
			continue // the author's: kept in meta
		}
		if err := v.Decode(dst); err != nil {
			return fmt.Errorf("%s: %w", k.Value, err)
		}
	}
	return nil
}

// merge returns c.meta with the fields of fresh (c, encoded) merged in: a field of c
// replaces the value of its key where it is, unless it is an author's field whose value
// the YAML there already gives; a field the YAML lacks goes after the field of c before
// it; a key of the Card that fresh leaves out (an empty field) is dropped; every other
// key stays where it is, with its value and comments. c.meta is not changed.
func (c *Card) merge(fresh *yaml.Node) *yaml.Node {
	doc := *c.meta
	old, err := metaMapping(&doc)
	if err != nil {
		return fresh // ParseCard would have refused it
	}
	values := map[string]*yaml.Node{}
	for i := 0; i+1 < len(fresh.Content); i += 2 {
		values[fresh.Content[i].Value] = fresh.Content[i+1]
	}
	m := *old
	m.Content = nil
	for i := 0; i+1 < len(old.Content); i += 2 {
		if k := old.Content[i].Value; cardKeys[k] && values[k] == nil {
			continue
		}
		m.Content = append(m.Content, old.Content[i], old.Content[i+1])
	}
	last := -1 // the pair of the previous field of c
	for i := 0; i+1 < len(fresh.Content); i += 2 {
		k, v := fresh.Content[i], fresh.Content[i+1]
		j := -1
		for p := 0; p+1 < len(m.Content); p += 2 {
			if m.Content[p].Value == k.Value {
				j = p / 2
				break
			}
		}
		if j < 0 {
			last++
			m.Content = slices.Insert(m.Content, 2*last, k, v)
			continue
		}
		last = j
		f := slices.IndexFunc(authorFields, func(f authorField) bool { return f.key == k.Value })
		if f >= 0 && authorFields[f].equal(c, m.Content[2*j+1]) {
			continue
		}
		m.Content[2*j+1] = v
	}
	doc.Content = []*yaml.Node{&m}
	inlineLostAnchors(&doc)
	return &doc
}

// inlineLostAnchors replaces each alias whose anchor went with a replaced value by a copy
// of what it stood for, so that the YAML still parses.
func inlineLostAnchors(doc *yaml.Node) {
	anchors := map[*yaml.Node]bool{}
	var find func(n *yaml.Node)
	find = func(n *yaml.Node) {
		if n.Anchor != "" {
			anchors[n] = true
		}
		if n.Kind != yaml.AliasNode {
			for _, c := range n.Content {
				find(c)
			}
		}
	}
	find(doc)
	var fix func(n *yaml.Node)
	fix = func(n *yaml.Node) {
		for i, c := range n.Content {
			if c.Kind == yaml.AliasNode && c.Alias != nil && !anchors[c.Alias] {
				cp := *c.Alias
				cp.Anchor = ""
				n.Content[i] = &cp
				c = &cp
			}
			if c.Kind != yaml.AliasNode {
				fix(c)
			}
		}
	}
	fix(doc)
}
