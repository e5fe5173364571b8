package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

func init() {
	register(&command{name: "completion", summary: "print a shell completion script (bash, zsh or fish)", run: runCompletion})
}

// verbFlags lists each verb's flags, by running its --help against a FlagSet that records
// them: the completion scripts are made from the verbs themselves, so they cannot drift.
func verbFlags(ctx context.Context) map[string][]string {
	out := map[string][]string{}
	for name, c := range commands {
		if name == "completion" {
			continue
		}
		var b strings.Builder
		env := &Env{Stdout: &b, Stderr: &b, Getenv: func(string) string { return "" }}
		c.run(ctx, env, []string{"--help"})
		out[name] = flagsInHelp(b.String())
	}
	return out
}

func runCompletion(ctx context.Context, env *Env, args []string) int {
	fs := newFlagSet(env, "completion", "bash|zsh|fish", `
Prints a completion script for the shell: verbs, and each verb's flags.

  source <(tapebox completion bash)
  tapebox completion zsh > "${fpath[1]}/_tapebox"
  tapebox completion fish > ~/.config/fish/completions/tapebox.fish`)
	if code, done := parse(env, fs, args); done {
		return code
	}
	if fs.NArg() != 1 {
		return usageError(env, fs, "name one shell: bash, zsh or fish")
	}
	flags := verbFlags(ctx)
	var verbs []string
	for v := range commands {
		verbs = append(verbs, v)
	}
	slices.Sort(verbs)
	switch fs.Arg(0) {
	case "bash":
		fmt.Fprintf(env.Stdout, "# bash completion for tapebox\n_tapebox() {\n  local cur=${COMP_WORDS[COMP_CWORD]} verb=${COMP_WORDS[1]}\n")
		fmt.Fprintf(env.Stdout, "  if [ \"$COMP_CWORD\" -eq 1 ]; then COMPREPLY=($(compgen -W %q -- \"$cur\")); return; fi\n", strings.Join(verbs, " "))
		fmt.Fprintf(env.Stdout, "  case $verb in\n")
		for _, v := range verbs {
			fmt.Fprintf(env.Stdout, "    %s) COMPREPLY=($(compgen -W %q -- \"$cur\"));;\n", v, strings.Join(flags[v], " "))
		}
		fmt.Fprintf(env.Stdout, "  esac\n  [ ${#COMPREPLY[@]} -eq 0 ] && COMPREPLY=($(compgen -f -- \"$cur\"))\n}\ncomplete -F _tapebox tapebox\n")
	case "zsh":
		fmt.Fprintf(env.Stdout, "#compdef tapebox\n_tapebox() {\n  if (( CURRENT == 2 )); then compadd %s; return; fi\n  case $words[2] in\n", strings.Join(verbs, " "))
		for _, v := range verbs {
			fmt.Fprintf(env.Stdout, "    %s) compadd -- %s; _files;;\n", v, strings.Join(flags[v], " "))
		}
		fmt.Fprintf(env.Stdout, "  esac\n}\ncompdef _tapebox tapebox\n")
	case "fish":
		fmt.Fprintf(env.Stdout, "# fish completion for tapebox\n")
		for _, v := range verbs {
			fmt.Fprintf(env.Stdout, "complete -c tapebox -n '__fish_use_subcommand' -a %s -d %q\n", v, commands[v].summary)
			for _, f := range flags[v] {
				fmt.Fprintf(env.Stdout, "complete -c tapebox -n '__fish_seen_subcommand_from %s' -l %s\n", v, strings.TrimLeft(f, "-"))
			}
		}
	default:
		return usageError(env, fs, "unknown shell %q: bash, zsh or fish", fs.Arg(0))
	}
	return ExitOK
}

// flagsInHelp lists the flags a verb's --help prints, as "--name", sorted: flag.PrintDefaults
// writes "  -name TYPE" (descriptions may quote "--flags", which are not taken).
func flagsInHelp(help string) []string {
	var flags []string
	for _, line := range strings.Split(help, "\n") {
		if len(line) > 3 && strings.HasPrefix(line, "  -") && line[3] != '-' && line[3] != ' ' {
			f, _, _ := strings.Cut(strings.TrimSpace(line), " ")
			flags = append(flags, "-"+f)
		}
	}
	slices.Sort(flags)
	return slices.Compact(flags)
}
