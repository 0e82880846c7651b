# klog.awk: /dev/kmsg records (as `cat /dev/kmsg` writes them: "LEVEL,SEQ,USEC,FLAGS;TEXT",
# then " KEY=VALUE" lines) as dmesg prints them, "[SECONDS] TEXT". Records are taken in
# sequence order once each: the reader restarts after the ring overran it, and a reopened
# /dev/kmsg starts again at the oldest record. A gap in the numbers (records the ring lost
# before they were read) is a line of its own that the harness treats as a report.
# With -v from=MARK, output starts at the record whose text is MARK and with -v to=MARK,
# ends at the one whose text is MARK (both printed).
BEGIN { last = -1; on = (from == "") }
/^ / { next }
{
	semi = index($0, ";")
	if (!semi) next
	split(substr($0, 1, semi - 1), f, ",")
	seq = f[2] + 0
	if (seq <= last) next
	text = substr($0, semi + 1)
	if (!on && text == from) on = 1
	if (on && last >= 0 && seq > last + 1)
		printf "[siw_rs-harness] the kernel log lost %d records before record %d\n", seq - last - 1, seq
	last = seq
	if (!on) next
	gsub(/\\x0a/, "\n", text)
	gsub(/\\x09/, "\t", text)
	printf "[%12.6f] %s\n", f[3] / 1000000, text
	if (to != "" && text == to) exit
}
