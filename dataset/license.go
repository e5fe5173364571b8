package dataset

import (
	_ "embed"
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// spdxIDs is the SPDX license list's identifiers, current and deprecated (from the
// spdx-license-ids package, CC0-1.0), one a line after a comment.
//
//go:embed spdx-license-ids.txt
var spdxIDs string

// spdxByFold maps each SPDX identifier in lower case to its own spelling.
var spdxByFold = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(spdxIDs, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			m[strings.ToLower(line)] = line
		}
	}
	return m
})

// licenseRef is a license of one's own, as SPDX spells it (LicenseRef-acme-1.0).
var licenseRef = regexp.MustCompile(`^LicenseRef-[A-Za-z0-9.-]+$`)

// hubLicenses are license ids of the Hugging Face Hub
// (https://huggingface.co/docs/hub/repositories-licenses), which spells them in lower
// case. ParseLicense takes any id of the right shape; these it also spells as the Hub
// does, so that "Apache-2.0" becomes the "apache-2.0" the Hub recognises.
var hubLicenses = strings.Fields(`
	apache-2.0 mit openrail bigscience-openrail-m creativeml-openrail-m bigscience-bloom-rail-1.0
	bigcode-openrail-m afl-3.0 artistic-2.0 bsl-1.0 bsd bsd-2-clause bsd-3-clause
	bsd-3-clause-clear c-uda cc cc0-1.0 cc-by-2.0 cc-by-2.5 cc-by-3.0 cc-by-4.0 cc-by-sa-3.0
	cc-by-sa-4.0 cc-by-nc-2.0 cc-by-nc-3.0 cc-by-nc-4.0 cc-by-nd-4.0 cc-by-nc-nd-3.0
	cc-by-nc-nd-4.0 cc-by-nc-sa-2.0 cc-by-nc-sa-3.0 cc-by-nc-sa-4.0 cdla-sharing-1.0
	cdla-permissive-1.0 cdla-permissive-2.0 wtfpl ecl-2.0 epl-1.0 epl-2.0 etalab-2.0 eupl-1.1
	eupl-1.2 agpl-3.0 gfdl gpl gpl-2.0 gpl-3.0 lgpl lgpl-2.1 lgpl-3.0 isc lppl-1.3c ms-pl
	mpl-2.0 odc-by odbl openrail++ osl-3.0 postgresql ofl-1.1 ncsa unlicense zlib pddl lgpl-lr
	llama2 llama3 llama3.1 llama3.2 llama3.3 llama4 gemma unknown other`)

// licenseShape is what an SPDX identifier or a Hub license id looks like: letters,
// digits, ".", "-" and "+", starting with a letter or digit.
var licenseShape = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.+-]*$`)

// ParseLicense checks a license id for the dataset card: an id of the Hub's (apache-2.0,
// mit, cc-by-4.0, other, ...), returned as the Hub spells it whatever its case; an SPDX
// identifier of the SPDX license list (GPL-3.0-or-later), returned as SPDX spells it; or a
// LicenseRef-NAME of one's own. Anything else is an error: a name with spaces, an SPDX
// expression ("MIT OR Apache-2.0"), a URL, or an id no list has ("not-a-license").
func ParseLicense(id string) (string, error) {
	for _, l := range hubLicenses {
		if strings.EqualFold(id, l) {
			return l, nil
		}
	}
	if len(id) > 64 || !licenseShape.MatchString(id) {
		return "", fmt.Errorf("license %q: want a license id, as the Hub has them (apache-2.0, mit, cc-by-4.0, other, ...: "+
			"https://huggingface.co/docs/hub/repositories-licenses) or an SPDX identifier: letters, digits, '.', '-' and '+'", id)
	}
	if s, ok := spdxByFold()[strings.ToLower(id)]; ok {
		return s, nil
	}
	if licenseRef.MatchString(id) {
		return id, nil
	}
	return "", fmt.Errorf("license %q: want a license id, as the Hub has them (apache-2.0, mit, cc-by-4.0, other, ...: "+
		"https://huggingface.co/docs/hub/repositories-licenses), an SPDX identifier (https://spdx.org/licenses/) or LicenseRef-NAME; "+
		"%q is neither (other says the license is none of these)", id, id)
}
