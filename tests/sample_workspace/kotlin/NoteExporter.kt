package notes

/** Something that can turn notes into text. */
interface Exporter {
    fun export(titles: List<String>): String
}

/** Base class that numbers the lines it writes. */
open class NumberedWriter {
    protected fun number(lines: List<String>): List<String> =
        lines.mapIndexed { i, line -> "${i + 1}. $line" }
}

/** Exports note titles as a numbered plain-text list. */
class PlainTextExporter(private val header: String) : NumberedWriter(), Exporter {
    override fun export(titles: List<String>): String {
        val body = number(titles).joinToString("\n")
        return "$header\n$body"
    }
}

data class ExportResult(val text: String, val count: Int)

fun exportAll(exporter: Exporter, titles: List<String>): ExportResult =
    ExportResult(exporter.export(titles), titles.size)
