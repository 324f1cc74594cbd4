// Light, dark or the system's choice; remembered in localStorage. Plots read
// `theme.resolved` so they are rebuilt with the new colours when it changes.

export type ThemeChoice = 'auto' | 'light' | 'dark';

const media = matchMedia('(prefers-color-scheme: dark)');

class Theme {
  choice = $state<ThemeChoice>((localStorage.getItem('meshperf-theme') as ThemeChoice) || 'auto');
  system = $state<'light' | 'dark'>(media.matches ? 'dark' : 'light');
  resolved = $derived(this.choice === 'auto' ? this.system : this.choice);
}
export const theme = new Theme();
media.addEventListener('change', () => (theme.system = media.matches ? 'dark' : 'light'));

export function setTheme(c: ThemeChoice): void {
  theme.choice = c;
  localStorage.setItem('meshperf-theme', c);
  apply();
}

export function apply(): void {
  if (theme.choice === 'auto') delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = theme.choice;
}
