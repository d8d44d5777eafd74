//! What a safe bin may be given and still run without asking: an allowlist of options per
//! program, not a list of bad ones. An option a table does not name (a new release's
//! `--compress-program`, an abbreviation GNU would accept, a letter nobody reviewed) makes the
//! command an ordinary one, judged by the rest of the policy: asked at level `allowlist`, never
//! blocked for it. The tables list read-only uses only: nothing here writes a file, runs a
//! program, or changes the system.

use crate::security::shell_syntax::SimpleCommand;

/// One program's grammar, as far as the policy needs it.
struct Options {
    name: &'static str,
    /// Short flags, alone or clustered (`-la`).
    flags: &'static str,
    /// Short options that take a value: the rest of the word, or the next word.
    valued: &'static str,
    /// Long options without a value, space-separated.
    long: &'static str,
    /// Long options with a value (`--key=v` or `--key v`), space-separated.
    long_valued: &'static str,
    /// The most operands it may take (`uniq IN` but not `uniq IN OUT`), if limited.
    max_operands: Option<usize>,
    /// `-NUM` is a count (`head -20`).
    numbers: bool,
}

const fn opts(
    name: &'static str,
    flags: &'static str,
    valued: &'static str,
    long: &'static str,
    long_valued: &'static str,
) -> Options {
    Options {
        name,
        flags,
        valued,
        long,
        long_valued,
        max_operands: None,
        numbers: false,
    }
}

const fn with_numbers(mut o: Options) -> Options {
    o.numbers = true;
    o
}

const fn at_most(mut o: Options, n: usize) -> Options {
    o.max_operands = Some(n);
    o
}

/// Programs that take no option that writes or runs anything, and whose every word is text
/// (`echo -e`, `test -f x`, `expr 1 + 2`, `true --anything`).
const FREE: &[&str] = &["echo", "test", "[", "expr", "true", "false"];

const TABLES: &[Options] = &[
    opts(
        "ls",
        "aAbBcCdDfFgGhHiklLmnNopqQrRsStuUvwxXZ1",
        "ITw",
        "all almost-all author escape directory dired classify file-type full-time \
         group-directories-first no-group human-readable si dereference-command-line \
         dereference-command-line-symlink-to-dir inode kibibytes dereference numeric-uid-gid \
         literal hide-control-chars show-control-chars quote-name recursive reverse size \
         context zero help version color",
        "block-size color format hide hyperlink ignore indicator-style quoting-style sort \
         time time-style tabsize width",
    ),
    opts(
        "cat",
        "AbeEnstTuv",
        "",
        "show-all number-nonblank number squeeze-blank show-ends show-tabs \
         show-nonprinting help version",
        "",
    ),
    with_numbers(opts(
        "head",
        "qvz",
        "nc",
        "quiet silent verbose zero-terminated help version",
        "lines bytes",
    )),
    with_numbers(opts(
        "tail",
        "fFqvzr",
        "ncs",
        "follow retry quiet silent verbose zero-terminated help version",
        "lines bytes sleep-interval pid max-unchanged-stats",
    )),
    opts(
        "wc",
        "clmwL",
        "",
        "bytes chars lines words max-line-length help version",
        "files0-from total",
    ),
    with_numbers(opts(
        "grep",
        "EFGPiyvwxcLlmoqsbHhnTZzaIrRUV",
        "efmABCdD",
        "extended-regexp fixed-strings basic-regexp perl-regexp ignore-case no-ignore-case \
         invert-match word-regexp line-regexp count files-without-match files-with-matches \
         only-matching quiet silent no-messages byte-offset with-filename no-filename \
         line-number initial-tab null null-data text recursive dereference-recursive \
         line-buffered help version color colour",
        "regexp file max-count after-context before-context context binary-files devices \
         directories exclude exclude-from exclude-dir include label color colour",
    )),
    opts(
        "rg",
        "abBcCeEfFgHhiIjlLmMnNoOpPqrsStTuUvVwxz0",
        "ABCeEfgjmMrtTd",
        "after-context before-context binary block-buffered byte-offset case-sensitive \
         column context count count-matches crlf debug dfa-size-limit files files-with-matches \
         files-without-match fixed-strings follow glob-case-insensitive heading hidden \
         ignore-case ignore-file-case-insensitive invert-match json line-buffered line-number \
         line-regexp multiline multiline-dotall no-config no-filename no-heading no-ignore \
         no-ignore-dot no-ignore-exclude no-ignore-files no-ignore-global no-ignore-messages \
         no-ignore-parent no-ignore-vcs no-line-number no-messages no-mmap no-pcre2-unicode \
         no-require-git no-unicode null null-data one-file-system only-matching passthru \
         pcre2 pretty quiet search-zip smart-case sort-files stats text trim type-list \
         unrestricted vimgrep with-filename word-regexp help version no-follow no-hidden \
         no-column no-byte-offset no-stats no-text no-trim no-search-zip auto-hybrid-regex \
         files-with-matches",
        "after-context before-context color colors context context-separator dfa-size-limit \
         encoding engine field-context-separator field-match-separator file glob hostname-bin \
         hyperlink-format iglob ignore-file max-columns max-count max-depth max-filesize \
         path-separator regex-size-limit regexp replace sort sortr threads type type-add \
         type-clear type-not",
    ),
    opts("printf", "", "", "help version", ""),
    opts("pwd", "LP", "", "logical physical help version", ""),
    opts(
        "date",
        "uRI",
        "dfr",
        "utc universal rfc-email iso-8601 debug help version",
        "date file reference rfc-3339 iso-8601",
    ),
    opts("whoami", "", "", "help version", ""),
    opts(
        "id",
        "agGnruZz",
        "",
        "group groups name real user zero context help version",
        "",
    ),
    opts(
        "uname",
        "asnrvmpio",
        "",
        "all kernel-name nodename kernel-release kernel-version machine processor \
         hardware-platform operating-system help version",
        "",
    ),
    at_most(
        opts(
            "hostname",
            "aAdfiIsy",
            "",
            "alias all-fqdns domain fqdn long ip-address all-ip-addresses short yp nis \
             help version",
            "",
        ),
        0,
    ),
    opts(
        "which",
        "as",
        "",
        "all skip-alias skip-functions help version",
        "",
    ),
    opts("type", "aftpP", "", "", ""),
    opts(
        "file",
        "bcEhiIkLlNnprsSvzZ0",
        "eFmP",
        "brief checking-printout dereference no-dereference mime mime-type mime-encoding \
         keep-going list no-buffer no-pad preserve-date raw special-files uncompress \
         uncompress-noreport extension apple print0 help version",
        "exclude exclude-quiet files-from magic-file separator parameter",
    ),
    opts(
        "stat",
        "LfT",
        "c",
        "dereference file-system terse help version",
        "format printf cached",
    ),
    opts(
        "du",
        "0abcDhHklLmPsSx",
        "BdtX",
        "null all apparent-size bytes total dereference-args human-readable inodes \
         dereference count-links no-dereference separate-dirs si summarize one-file-system \
         help version",
        "block-size max-depth threshold time time-style exclude exclude-from files0-from",
    ),
    opts(
        "df",
        "ahHiklPTv",
        "BtxF",
        "all human-readable si inodes local no-sync sync portability total print-type \
         help version output",
        "block-size type exclude-type output",
    ),
    opts(
        "sort",
        "bdfgiMhnRrVcCmsuz",
        "kSt",
        "ignore-leading-blanks dictionary-order ignore-case general-numeric-sort \
         ignore-nonprinting month-sort human-numeric-sort numeric-sort random-sort reverse \
         version-sort check merge stable unique zero-terminated debug help version",
        "key buffer-size field-separator parallel random-source sort files0-from batch-size",
    ),
    at_most(
        opts(
            "uniq",
            "cdDiuz",
            "fsw",
            "count repeated unique ignore-case zero-terminated help version",
            "all-repeated group skip-fields skip-chars check-chars",
        ),
        1,
    ),
    opts(
        "cut",
        "nsz",
        "bcdf",
        "complement only-delimited zero-terminated help version",
        "bytes characters delimiter fields output-delimiter",
    ),
    opts(
        "tr",
        "cCdst",
        "",
        "complement delete squeeze-repeats truncate-set1 help version",
        "",
    ),
    opts(
        "diff",
        "abBdEiNpqrsStTuwyZ",
        "CFIUWxXL",
        "normal brief report-identical-files unified context ed rcs side-by-side \
         left-column suppress-common-lines show-c-function expand-tabs initial-tab \
         suppress-blank-empty new-file unidirectional-new-file ignore-case \
         ignore-tab-expansion ignore-trailing-space ignore-space-change ignore-all-space \
         ignore-blank-lines text strip-trailing-cr minimal speed-large-files \
         recursive no-dereference help version color",
        "unified context show-function-line label width tabsize exclude exclude-from \
         starting-file from-file to-file ignore-matching-lines line-format \
         old-line-format new-line-format unchanged-line-format old-group-format \
         new-group-format changed-group-format unchanged-group-format horizon-lines \
         color palette",
    ),
    opts(
        "cmp",
        "blsz",
        "in",
        "print-bytes verbose quiet silent zero help version",
        "ignore-initial bytes",
    ),
    opts(
        "basename",
        "az",
        "s",
        "multiple zero help version",
        "suffix",
    ),
    opts("dirname", "z", "", "zero help version", ""),
    opts(
        "realpath",
        "eLmPqsz",
        "",
        "canonicalize-existing logical canonicalize-missing physical quiet strip \
         no-symlinks zero help version",
        "relative-to relative-base",
    ),
    opts(
        "readlink",
        "efmnqsvz",
        "",
        "canonicalize canonicalize-existing canonicalize-missing no-newline quiet silent \
         verbose zero help version",
        "",
    ),
    with_numbers(opts(
        "seq",
        "w",
        "fs",
        "equal-width help version",
        "format separator",
    )),
    opts(
        "tree",
        "adlfxqNQpugshDFrtcUvCnJXi",
        "LPI",
        "noreport dirsfirst filesfirst gitignore du prune matchdirs ignore-case inodes \
         device si timefmt help version fromfile metafirst info",
        "charset filelimit sort timefmt gitfile infofile",
    ),
    opts(
        "less",
        "aBcCdeEfFgGiIJKLmMnNqQrRsSuUVwWX~",
        "bhjpPtTxyz",
        "quit-at-eof QUIT-AT-EOF quit-if-one-screen ignore-case IGNORE-CASE status-column \
         long-prompt LINE-NUMBERS line-numbers quiet QUIET silent SILENT raw-control-chars \
         RAW-CONTROL-CHARS squeeze-blank-lines chop-long-lines underline-special \
         UNDERLINE-SPECIAL no-init no-keypad mouse wheel-lines help version",
        "pattern prompt tabs window shift max-back-scroll max-forw-scroll",
    ),
    opts(
        "more",
        "dflcpsu",
        "n",
        "silent logical no-pause print-over clean-print squeeze plain help version",
        "lines",
    ),
    opts(
        "nl",
        "p",
        "bdfhilnsvw",
        "no-renumber help version",
        "body-numbering section-delimiter footer-numbering header-numbering line-increment \
         join-blank-lines number-format number-separator starting-line-number number-width",
    ),
    opts(
        "column",
        "ejtxnLR",
        "cdsoNHlOWE",
        "table json keep-empty-lines fillrows help version",
        "columns table-columns table-name separator output-separator table-order \
         table-right table-truncate table-hide table-wrap output-width",
    ),
    opts(
        "jq",
        "rjacnsSeCMh",
        "Lf",
        "raw-output join-output ascii-output compact-output null-input slurp sort-keys \
         exit-status color-output monochrome-output tab seq stream stream-errors \
         raw-input raw-output0 help version",
        "indent from-file arg argjson slurpfile rawfile args jsonargs",
    ),
    opts(
        "md5sum",
        "bctwz",
        "",
        "binary check tag text zero ignore-missing quiet status strict warn help version",
        "",
    ),
    opts("uptime", "ps", "", "pretty since help version", ""),
    opts(
        "free",
        "bkmghltwv",
        "sc",
        "bytes kilo mega giga tera peta kibi mebi gibi tebi pebi human lohi total wide \
         committed si help version",
        "seconds count",
    ),
    opts(
        "env",
        "0i",
        "u",
        "null ignore-environment help version",
        "unset",
    ),
    opts("printenv", "0", "", "null help version", ""),
    opts(
        "comm",
        "123iz",
        "",
        "check-order nocheck-order total zero-terminated help version",
        "output-delimiter",
    ),
    opts(
        "join",
        "izv",
        "12aejotv",
        "ignore-case check-order nocheck-order header zero-terminated help version",
        "",
    ),
    opts(
        "paste",
        "sz",
        "d",
        "serial zero-terminated help version",
        "delimiters",
    ),
    opts("fold", "bs", "w", "bytes spaces help version", "width"),
    opts(
        "fmt",
        "cstu",
        "wpg",
        "crown-margin split-only tagged-paragraph uniform-spacing help version",
        "width prefix goal",
    ),
    opts("rev", "0", "", "zero help version", ""),
    opts("tac", "br", "s", "before regex help version", "separator"),
    opts(
        "od",
        "abcdfilosvxbDFHILOSX",
        "AjNtwS",
        "output-duplicates traditional help version",
        "address-radix endian skip-bytes read-bytes strings format width",
    ),
    opts("hexdump", "bcCdovx", "enfsL", "canonical help version", ""),
    at_most(
        opts(
            "xxd",
            "abCeEiprudh",
            "cglnosR",
            "autoskip bits capitalize ebcdic include plain postscript uppercase decimal \
             help version",
            "cols groupsize len name seek",
        ),
        1,
    ),
    opts(
        "strings",
        "adfw",
        "nteTsU",
        "all data print-file-name include-all-whitespace help version",
        "bytes radix encoding target output-separator unicode",
    ),
];

/// Whether `command`'s options and operands are all ones its table allows.
pub(super) fn options_allowed(command: &SimpleCommand) -> bool {
    let name = command.program_name();
    let args: Vec<&str> = command.args.iter().map(String::as_str).collect();
    if FREE.contains(&name) {
        return true;
    }
    match name {
        "find" => return find_allowed(&args),
        "ps" => return ps_allowed(&args),
        "git" => return git_allowed(&args),
        // `printf -v NAME` assigns a variable; any other word is text to print.
        "printf" => return args.first().is_none_or(|a| !a.starts_with("-v")),
        _ => {}
    }
    // The same programs under other names share a table.
    let table_name = match name {
        "egrep" | "fgrep" => "grep",
        "sha1sum" | "sha224sum" | "sha256sum" | "sha384sum" | "sha512sum" | "b2sum" => "md5sum",
        other => other,
    };
    let Some(table) = TABLES.iter().find(|t| t.name == table_name) else {
        // A safe bin the person added, with no table here: it runs unasked only without
        // options, which nobody has reviewed for it.
        return args.iter().all(|a| !a.starts_with('-') || *a == "-");
    };
    let mut operands = 0;
    let fits = scan(&args, table, |a| {
        // `date +%F` is an operand; `+cmd` for less and more is a command.
        operands += 1;
        !(a.starts_with('+') && matches!(name, "less" | "more"))
    });
    fits && table.max_operands.is_none_or(|max| operands <= max)
}

/// Walks `args` by `grammar`: false at the first option it does not list, or the first
/// operand `operand` refuses. Values of valued options are skipped; `--` ends the options.
fn scan(args: &[&str], grammar: &Options, mut operand: impl FnMut(&str) -> bool) -> bool {
    let mut i = 0;
    let mut options = true;
    while i < args.len() {
        let a = args[i];
        i += 1;
        if !options || a == "-" || !a.starts_with('-') {
            if !operand(a) {
                return false;
            }
            continue;
        }
        if a == "--" {
            options = false;
            continue;
        }
        if let Some(body) = a.strip_prefix("--") {
            let (key, attached) = match body.split_once('=') {
                Some((k, _)) => (k, true),
                None => (body, false),
            };
            let valued = words(grammar.long_valued).any(|w| w == key);
            let bare = words(grammar.long).any(|w| w == key);
            if !(valued || (bare && !attached)) {
                return false;
            }
            if valued && !bare && !attached {
                i += 1;
            }
            continue;
        }
        let letters = &a[1..];
        if grammar.numbers && letters.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        for (at, letter) in letters.char_indices() {
            if grammar.valued.contains(letter) {
                if at + letter.len_utf8() == letters.len() {
                    i += 1;
                }
                break;
            }
            if !grammar.flags.contains(letter) {
                return false;
            }
        }
    }
    true
}

fn words(list: &'static str) -> impl Iterator<Item = &'static str> {
    list.split_whitespace()
}

/// `find`'s expression: the tests and actions that only read and print.
fn find_allowed(args: &[&str]) -> bool {
    const BARE: &str = "( ) ! , -a -o -and -or -not -print -print0 -ls -prune -quit -empty \
        -readable -writable -executable -depth -follow -noleaf -daystart -xdev -mount -true \
        -false -nouser -nogroup -L -H -P -help -version";
    const VALUED: &str = "-name -iname -path -ipath -wholename -iwholename -regex -iregex \
        -type -xtype -maxdepth -mindepth -newer -anewer -cnewer -mtime -mmin -atime -amin \
        -ctime -cmin -size -perm -user -group -uid -gid -links -inum -samefile -lname \
        -ilname -regextype -printf -fstype -used -newermt -newerct -newerat -newermm -D -O";
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        i += 1;
        if words(VALUED).any(|w| w == a) {
            i += 1;
        } else if ((a.starts_with('-') && a.len() > 1) || matches!(a, "(" | ")" | "!" | ","))
            && !words(BARE).any(|w| w == a)
        {
            return false;
        }
    }
    true
}

/// `ps`: its own options and BSD-style letter words, but not `e`, which shows every listed
/// process's environment (where keys live).
fn ps_allowed(args: &[&str]) -> bool {
    const PS: Options = opts(
        "ps",
        "aAdefFHjlLmMNTwxyZcPrV",
        "oOpuUCgGtqsk",
        "forest no-headers headers help version deselect cumulative",
        "sort pid ppid user User group Group format cols columns width lines rows tty \
         quick-pid sid context",
    );
    const BSD: &str = "auxfjlwrTSvsnmHZchgkLqUopt";
    scan(args, &PS, |a| {
        a.chars().all(|c| c.is_ascii_digit() || c == ',') || a.chars().all(|c| BSD.contains(c))
    })
}

/// Git's read-only subcommands with read-only options. Configuration and environment that
/// would make them run something (`-c`, `GIT_*`) are judged elsewhere and never reach here
/// unasked.
fn git_allowed(args: &[&str]) -> bool {
    const SUBCOMMANDS: &str = "status log diff show blame ls-files rev-parse describe shortlog \
        ls-tree cat-file show-ref merge-base name-rev rev-list count-objects branch tag remote \
        stash reflog grep whatchanged annotate ls-remote help version config";
    const GIT: Options = opts(
        "git",
        "pusvqbzwclLIEFGiahmrtMCRBWTSUdNX0123456789okn",
        "nUSGLefAB",
        "oneline stat shortstat numstat name-only name-status graph decorate \
         no-decorate all branches tags remotes reverse patch no-patch raw cached staged color \
         no-color word-diff ignore-space-change ignore-all-space ignore-blank-lines follow \
         abbrev-commit no-abbrev-commit first-parent merges no-merges summary minimal \
         patience histogram relative exit-code quiet check full-index binary abbrev no-abbrev \
         left-right cherry-pick cherry-mark boundary topo-order date-order author-date-order \
         source full-diff no-renames find-renames find-copies short long porcelain \
         ahead-behind no-ahead-behind show-stash verbose list show-current heads abbrev-ref \
         show-toplevel git-dir is-inside-work-tree is-inside-git-dir symbolic-full-name \
         verify show-prefix git-common-dir absolute-git-dir always dirty exact-match \
         deleted modified others ignored stage unmerged killed exclude-standard \
         error-unmatch full-name recurse-submodules line-number count files-with-matches \
         files-without-match ignore-case word-regexp extended-regexp fixed-strings \
         perl-regexp invert-match heading break function-context show-function untracked \
         no-index line-porcelain incremental show-email show-name show-number root \
         batch-check numbered email no-pager get get-all get-regexp show-origin show-scope \
         global local system null walk-reflogs simplify-by-decoration ancestry-path dense \
         sparse full-history no-prefix ita-invisible-in-index compact-summary cumulative \
         text ignore-cr-at-eol color-moved no-color-moved anchored remerge-diff \
         no-show-signature mailmap no-mailmap use-mailmap no-walk",
        "date author committer grep since until after before max-count skip diff-filter \
         format pretty unified sort contains no-contains merged no-merged points-at exclude \
         untracked-files context after-context before-context color abbrev stat decorate \
         word-diff-regex encoding relative dirstat submodule ignore-submodules min-age \
         max-age color-moved diff-algorithm find-renames find-copies max-depth type column \
         src-prefix dst-prefix diff-merges",
    );
    // Global options before the subcommand: only ones that read.
    let mut i = 0;
    while i < args.len() {
        match args[i] {
            "-C" => i += 2,
            "--no-pager"
            | "-P"
            | "--no-optional-locks"
            | "--literal-pathspecs"
            | "--no-replace-objects" => i += 1,
            _ => break,
        }
    }
    let Some(sub) = args.get(i) else {
        return false;
    };
    if !words(SUBCOMMANDS).any(|w| w == *sub) {
        return false;
    }
    let rest = &args[i + 1..];
    let has = |list: &[&str]| rest.iter().any(|a| list.contains(a));
    let first_operand = rest.iter().find(|a| !a.starts_with('-')).copied();
    let fits = match *sub {
        // Without a listing option these create, rename or delete.
        "branch" | "tag" => {
            first_operand.is_none()
                || has(&[
                    "-l",
                    "--list",
                    "--contains",
                    "--merged",
                    "--no-merged",
                    "--points-at",
                ])
        }
        "remote" => first_operand.is_none_or(|o| matches!(o, "show" | "get-url")),
        "stash" => first_operand.is_some_and(|o| matches!(o, "list" | "show")),
        "reflog" => first_operand.is_none_or(|o| o == "show"),
        "config" => {
            has(&["--get", "--get-all", "--get-regexp", "--list", "-l"])
                || first_operand.is_some_and(|o| matches!(o, "get" | "list"))
        }
        _ => true,
    };
    fits && scan(rest, &GIT, |_| true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::shell_syntax::analyze;

    fn allowed(command: &str) -> bool {
        let analysis = analyze(command);
        analysis.commands.iter().all(options_allowed)
    }

    #[test]
    fn everyday_options_are_allowed() {
        for command in [
            "ls -la",
            "ls -lh --color=auto src",
            "grep -rn foo src",
            "grep -rn --include='*.rs' -e foo src",
            "head -n 20 f",
            "head -20 f",
            "tail -n +5 f",
            "wc -l f",
            "sort -u f",
            "sort -t, -k2 -n f",
            "cat -n f",
            "cut -d: -f1 /etc/passwd",
            "rg -n --hidden -g '*.rs' foo",
            "find . -name '*.rs' -type f -print",
            "ps aux",
            "ps -eo pid,cmd",
            "jq -r --arg x 1 .name f.json",
            "date +%F",
            "du -sh .",
            "git status --short",
            "git log --oneline -n 20",
            "git diff --stat HEAD~1",
            "git branch -a",
            "git -C ../other log -3",
        ] {
            assert!(allowed(command), "{command} was not allowed");
        }
    }

    #[test]
    fn options_nobody_listed_are_not() {
        for command in [
            "sort --compress-prog=sh f",
            "sort -o out f",
            "sort -T /tmp f",
            "ls --unknown-option",
            "grep --pre=x foo",
            "rg --pre sh foo",
            "less +!sh f",
            "less -k keys f",
            "less -o log f",
            "tree -o out",
            "tree -R -H .",
            "uniq in out",
            "xxd -r in out",
            "hostname evil",
            "date -s 2020-01-01",
            "date --se=2020-01-01",
            "file -C -m magic",
            "find . -fprint out",
            "find . -delete",
            "find . -exec rm {} +",
            "ps eww",
            "ps axe",
            "printf -v x %s y",
            "git branch new-branch",
            "git tag v1",
            "git diff --output=x",
            "git log --ext-diff",
            "git grep -O foo",
            "git push",
            "git config user.name x",
            "git stash",
        ] {
            assert!(!allowed(command), "{command} was allowed");
        }
    }
}
