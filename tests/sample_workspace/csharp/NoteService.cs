using System;
using System.Collections.Generic;
using System.Linq;

namespace Notes
{
    /// <summary>Exports notes to other formats.</summary>
    public interface INoteExporter
    {
        string Export(IEnumerable<string> titles);
    }

    /// <summary>
    /// Writes note titles as a Markdown bullet list.
    /// </summary>
    public class MarkdownExporter : INoteExporter, IDisposable
    {
        private bool disposed;

        public string Export(IEnumerable<string> titles)
        {
            if (disposed)
            {
                throw new ObjectDisposedException(nameof(MarkdownExporter));
            }
            return string.Join("\n", titles.Select(t => "- " + t));
        }

        public void Dispose()
        {
            disposed = true;
        }
    }

    public struct ExportOptions
    {
        public bool IncludeTags;
        public int MaxNotes;
    }

    public enum ExportFormat
    {
        Markdown,
        Html,
    }
}
