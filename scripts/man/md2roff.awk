# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# md2roff.awk: the hand-written man page sections (scripts/man/sections/*.md, a small Markdown:
# "## SECTION", "### Sub", paragraphs, "- " lists, ``` blocks, | tables |, `code`, **b**, *i*,
# [text](url)) as help2man include text: "[SECTION]" lines and roff. Plain POSIX awk (mawk).

# roff's escape character and a table's escaped "|" (as \001, put back by the caller)
function escape(s)
{
	gsub(/\\/, "\\e", s)
	gsub(/\\e\|/, "\001", s)
	return s
}

# roff names for the characters the pages use, after hyphens are escaped: output is ASCII
function glyphs(s)
{
	gsub(/—/, "\\(em", s)
	gsub(/–/, "\\(en", s)
	gsub(/…/, "...", s)
	gsub(/←/, "\\(<-", s)
	gsub(/→/, "\\(->", s)
	gsub(/≈/, "\\(~~", s)
	gsub(/±/, "\\(+-", s)
	gsub(/µ/, "\\(mc", s)
	gsub(/×/, "\\(mu", s)
	gsub(/≤/, "\\(<=", s)
	gsub(/≥/, "\\(>=", s)
	return s
}

# links, bold, italic and hyphens of text outside code spans
function prose(s, out)
{
	while (match(s, /\*\*[^*]+\*\*/))
		s = substr(s, 1, RSTART - 1) "\\fB" substr(s, RSTART + 2, RLENGTH - 4) "\\fR" \
			substr(s, RSTART + RLENGTH)
	while (match(s, /\*[^* ][^*]*\*/))
		s = substr(s, 1, RSTART - 1) "\\fI" substr(s, RSTART + 1, RLENGTH - 2) "\\fR" \
			substr(s, RSTART + RLENGTH)
	gsub(/-/, "\\-", s)
	return s
}

# A `code span` may run over a line end: one with an odd number of backticks is closed at its
# end and opened again at the next line's start (incode), until a blank line or a heading.
function inline(s, out, i, j, n, text, url)
{
	s = escape(s)
	while (match(s, /\*\*`[^`]*`\*\*/)) # **`x`**: code is bold already
		s = substr(s, 1, RSTART - 1) substr(s, RSTART + 2, RLENGTH - 4) substr(s, RSTART + RLENGTH)
	if (incode)
		s = "`" s
	n = gsub(/`/, "`", s)
	incode = n % 2
	if (incode)
		s = s "`"
	while (match(s, /\[[^]]*\]\([^)]*\)/)) {
		text = substr(s, RSTART + 1, RLENGTH - 2)
		i = index(text, "](")
		url = substr(text, i + 2)
		text = substr(text, 1, i - 1)
		if (url ~ /^https?:/)
			text = text " (" url ")"
		s = substr(s, 1, RSTART - 1) text substr(s, RSTART + RLENGTH)
	}
	out = ""
	while ((i = index(s, "`")) > 0) {
		j = index(substr(s, i + 1), "`")
		if (!j)
			break
		out = out prose(substr(s, 1, i - 1))
		text = substr(s, i + 1, j - 1)
		gsub(/-/, "\\-", text)
		out = out "\\fB" text "\\fR"
		s = substr(s, i + j + 1)
	}
	out = glyphs(out prose(s))
	gsub(/\001/, "|", out)
	if (out ~ /^[.'[\/]/)
		out = "\\&" out
	return out
}

function cells(row, arr, n, i)
{
	gsub(/\\\|/, "\001", row)
	sub(/^[ \t]*\|/, "", row)
	sub(/\|[ \t]*$/, "", row)
	n = split(row, arr, "|")
	for (i = 1; i <= n; i++) {
		gsub(/^[ \t]+|[ \t]+$/, "", arr[i])
	}
	return n
}

function table_row(line, c, n, i, rest)
{
	incode = 0
	n = cells(line, c)
	if (!theader) {
		theader = 1
		nhead = cells(line, head)
		return
	}
	if (c[1] ~ /^:?-+:?$/)
		return
	print ".TP"
	print inline(c[1])
	rest = ""
	for (i = 2; i <= n; i++) {
		if (nhead > 2)
			rest = rest (i > 2 ? "; " : "") head[i] ": " c[i]
		else
			rest = rest (i > 2 ? " " : "") c[i]
	}
	print inline(rest)
}

BEGIN { code = 0; pp = 0; theader = 0; incode = 0 }

code && /^```/ { print ".fi"; print ".RE"; code = 0; pp = 1; next }
code {
	s = escape($0)
	gsub(/\001/, "\\e|", s)
	gsub(/-/, "\\-", s)
	s = glyphs(s)
	if (s ~ /^[.']/)
		s = "\\&" s
	print s
	next
}
/^```/ { print ".PP"; print ".RS 2"; print ".nf"; code = 1; next }
/^# / { next }
/^## / { s = substr($0, 4); gsub(/`/, "", s); print "[" toupper(s) "]"; pp = 0; next }
/^###+ / {
	s = $0
	sub(/^#+ /, "", s)
	s = inline(s)
	gsub(/"/, "\\(dq", s)
	print ".SS \"" s "\""
	pp = 0
	next
}
/^[ \t]*$/ { pp = 1; theader = 0; incode = 0; next }
/^[ \t]*\|/ { table_row($0); pp = 1; next }
/^[ \t]*([-*]|[0-9]+\.) / {
	s = $0
	sub(/^[ \t]*/, "", s)
	mark = "\\(bu"
	if (s ~ /^[0-9]/) {
		mark = substr(s, 1, index(s, " ") - 1)
		width = 4
	} else {
		width = 2
	}
	sub(/^([-*]|[0-9]+\.) /, "", s)
	print ".IP " mark " " width
	print inline(s)
	pp = 0
	in_list = 1
	next
}
{
	s = $0
	sub(/^[ \t]+/, "", s)
	if (pp) {
		print ".PP"
		pp = 0
	}
	print inline(s)
}
